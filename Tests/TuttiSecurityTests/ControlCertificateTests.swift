import Crypto
import Foundation
import Testing
@testable import TuttiTrust

@Suite("The control API's certificate")
struct ControlCertificateTests {
    @Test func aMadeCertificateReadsBackWithItsKeyAndPin() throws {
        let made = try ControlCertificate.make(names: ["house", "house.local", "localhost"], addresses: [[127, 0, 0, 1], [192, 168, 1, 20]], now: Date())
        #expect(made.certificatePEM.hasPrefix("-----BEGIN CERTIFICATE-----"))
        #expect(made.privateKeyPEM.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        let read = try ControlCertificate(certificatePEM: made.certificatePEM, privateKeyPEM: made.privateKeyPEM)
        #expect(read.pin == made.pin && made.pin.hasPrefix("SHA256:") && made.pin.count == 7 + 43)
        #expect(try ControlCertificate.pin(certificatePEM: "junk before\n" + made.certificatePEM + "another\n") == made.pin)
        // The pin is the SHA-256 of the DER SubjectPublicKeyInfo, as TLS clients see the key.
        let key = try P256.Signing.PrivateKey(pemRepresentation: made.privateKeyPEM)
        #expect(ControlCertificate.pin(subjectPublicKeyInfo: key.publicKey.derRepresentation) == made.pin)
        #expect(try ControlCertificate.make(names: ["house"], addresses: [], now: Date()).pin != made.pin, "each certificate its own key")
    }

    @Test func aKeyThatIsNotTheCertificatesOrGarbageIsRefused() throws {
        let a = try ControlCertificate.make(names: ["a"], addresses: [], now: Date()), b = try ControlCertificate.make(names: ["b"], addresses: [], now: Date())
        #expect(throws: CertificateError("the private key is not the certificate's")) {
            try ControlCertificate(certificatePEM: a.certificatePEM, privateKeyPEM: b.privateKeyPEM)
        }
        #expect(throws: CertificateError.self) { try ControlCertificate(certificatePEM: "hello", privateKeyPEM: a.privateKeyPEM) }
        #expect(throws: CertificateError.self) { try ControlCertificate(certificatePEM: a.certificatePEM, privateKeyPEM: "") }
        let cut = String(a.certificatePEM.prefix(200)) + "\n-----END CERTIFICATE-----\n"
        #expect(throws: CertificateError.self) { try ControlCertificate.pin(certificatePEM: cut) }
    }

    @Test func pinsCompareWithOrWithoutPrefixAndPadding() {
        let pin = "SHA256:0ty4k/zZbHDm1GsgeJGxwWYqvoDMSU/sFitEZ8sT0fg"
        #expect(ControlCertificate.pinsMatch(pin, pin))
        #expect(ControlCertificate.pinsMatch("sha256:0ty4k/zZbHDm1GsgeJGxwWYqvoDMSU/sFitEZ8sT0fg=", pin))
        #expect(ControlCertificate.pinsMatch(" 0ty4k/zZbHDm1GsgeJGxwWYqvoDMSU/sFitEZ8sT0fg ", pin))
        #expect(!ControlCertificate.pinsMatch("SHA256:0ty4k/zZbHDm1GsgeJGxwWYqvoDMSU/sFitEZ8sT0fh", pin))
        #expect(!ControlCertificate.pinsMatch("SHA256:", "SHA256:"), "an empty pin names no key")
    }
}
