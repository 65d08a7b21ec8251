import Crypto
import FoundationEssentials
import SwiftASN1
import X509

/// The control API's TLS identity when it serves HTTPS: a certificate and its private key,
/// both PEM. Either the user's own (from their CA, or a public one), or one the coordinator
/// makes for itself on first start: P-256, self-signed, for the machine's names and
/// addresses. Browsers warn about a self-signed certificate once; `tutti ctl`, `tutti pair`
/// and `tutti lyrics` check it by its pin instead, the SHA-256 of its public key (the same
/// pin as HPKP's `pin-sha256`, shown as `SHA256:` and base64).
public struct ControlCertificate: Sendable {
    public let certificatePEM: String
    public let privateKeyPEM: String
    /// The pin of the certificate's public key.
    public let pin: String

    /// Reads a certificate (the first of a chain) and its key, and checks that they belong together.
    public init(certificatePEM: String, privateKeyPEM: String) throws(CertificateError) {
        let certificate: Certificate
        let key: Certificate.PrivateKey
        do {
            certificate = try Certificate(pemEncoded: Self.firstCertificate(certificatePEM))
        } catch {
            throw CertificateError("not a PEM certificate (\(error))")
        }
        do {
            key = try Certificate.PrivateKey(pemEncoded: privateKeyPEM)
        } catch {
            throw CertificateError("not a PEM private key (\(error))")
        }
        guard key.publicKey == certificate.publicKey else {
            throw CertificateError("the private key is not the certificate's")
        }
        self.certificatePEM = certificatePEM
        self.privateKeyPEM = privateKeyPEM
        do {
            pin = try Self.pin(of: certificate.publicKey)
        } catch {
            throw CertificateError("cannot read the certificate's public key (\(error))")
        }
    }

    /// A new self-signed certificate for a server named `names` (DNS) and reached at
    /// `addresses` (IPv4 or IPv6, 4 or 16 bytes), valid from an hour before `now` for ten years.
    public static func make(names: [String], addresses: [[UInt8]], now: Date) throws(CertificateError) -> ControlCertificate {
        do {
            let key = P256.Signing.PrivateKey()
            let name = try DistinguishedName {
                OrganizationName("tutti")
                CommonName(names.first ?? "tutti coordinator")
            }
            let alternatives = names.map { GeneralName.dnsName($0) }
                + addresses.filter { $0.count == 4 || $0.count == 16 }.map { GeneralName.ipAddress(ASN1OctetString(contentBytes: $0[...])) }
            let extensions = try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames(alternatives)
            }
            let certificate = try Certificate(
                version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(key.publicKey),
                notValidBefore: now.addingTimeInterval(-3600), notValidAfter: now.addingTimeInterval(10 * 365.25 * 86400),
                issuer: name, subject: name, signatureAlgorithm: .ecdsaWithSHA256, extensions: extensions,
                issuerPrivateKey: .init(key))
            return try ControlCertificate(certificatePEM: try certificate.serializeAsPEM().pemString + "\n",
                                          privateKeyPEM: key.pemRepresentation + "\n")
        } catch let error as CertificateError {
            throw error
        } catch {
            throw CertificateError("cannot make a certificate: \(error)")
        }
    }

    /// The pin of a public key given as a DER SubjectPublicKeyInfo (what a TLS client sees).
    public static func pin(subjectPublicKeyInfo: some Sequence<UInt8>) -> String {
        let digest = Array(SHA256.hash(data: Array(subjectPublicKeyInfo)))
        var text = Data(digest).base64EncodedString()
        while text.hasSuffix("=") { text.removeLast() }
        return "SHA256:" + text
    }

    /// Whether `pin` (as shown, with or without `SHA256:` and base64 padding) names the same key.
    public static func pinsMatch(_ pin: String, _ other: String) -> Bool {
        func bare(_ text: String) -> String {
            var s = Substring(text.trimmingSpaces())
            if s.lowercased().hasPrefix("sha256:") { s = s.dropFirst(7) }
            while s.hasSuffix("=") { s = s.dropLast() }
            return String(s)
        }
        return !bare(pin).isEmpty && bare(pin) == bare(other)
    }

    /// The pin of a certificate (the first of a PEM chain), without its key.
    public static func pin(certificatePEM: String) throws(CertificateError) -> String {
        do {
            return try pin(of: Certificate(pemEncoded: firstCertificate(certificatePEM)).publicKey)
        } catch {
            throw CertificateError("not a PEM certificate (\(error))")
        }
    }

    static func pin(of key: Certificate.PublicKey) throws -> String {
        var serializer = DER.Serializer()
        try serializer.serialize(key)
        return pin(subjectPublicKeyInfo: serializer.serializedBytes)
    }

    /// The first `CERTIFICATE` block of a PEM chain.
    static func firstCertificate(_ pem: String) -> String {
        guard let begin = pem.firstRange(of: "-----BEGIN CERTIFICATE-----"),
              let end = pem[begin.upperBound...].firstRange(of: "-----END CERTIFICATE-----") else { return pem }
        return String(pem[begin.lowerBound..<end.upperBound])
    }
}

public struct CertificateError: Error, CustomStringConvertible, Equatable {
    public var description: String
    public init(_ description: String) {
        self.description = description
    }
}
