import Foundation
import Testing
import TuttiCore
import TuttiSecurity
@testable import TuttiTrust

@Suite("Pairing with a one-time code")
struct PairingTests {
    @Test func codesAreTypableAndForgiving() throws {
        let code = Pairing.newCode()
        #expect(code.count == 11 && code.dropFirst(5).first == "-")
        let plain = try #require(Pairing.normalize(code))
        #expect(Pairing.normalize(code.lowercased()) == plain)
        #expect(Pairing.normalize(" " + code.replacingOccurrences(of: "-", with: " ")) == plain)
        #expect(Pairing.normalize("O1IL0-ABCDE") == "01110ABCDE", "O reads as 0, I and L as 1")
        #expect(Pairing.normalize("ABCDE-FGHJ") == nil && Pairing.normalize("ABCDE-FGHJU") == nil, "too short; U is not in the alphabet")
        #expect(Set((0..<50).map { _ in Pairing.newCode() }).count == 50)
    }

    @Test func theFollowerGetsTheHouseKeyWithTheRightCode() throws {
        let house = HouseKey.generate()
        let code = try #require(Pairing.normalize(Pairing.newCode()))
        let follower = try #require(Pairing.Follower(code: code))
        let answer = try Pairing.answer(follower.request, code: code, houseKey: house)
        #expect(try follower.open(answer).house == house && follower.open(answer).member == nil)
        #expect(!answer.sealedKey.contains(house.hex) && Data(base64Encoded: answer.sealedKey)?.count == 12 + 32 + 16)
    }

    /// A coordinator with members gives the new one its own credential with the house key,
    /// made only once the proof checked out.
    @Test func theFollowerGetsItsOwnCredentialToo() throws {
        let house = HouseKey.generate()
        let code = try #require(Pairing.normalize(Pairing.newCode()))
        let follower = try #require(Pairing.Follower(code: code))
        let credential = MemberKey.generate(id: 7)
        var made = 0
        #expect(throws: Pairing.Failure.wrongCode) {
            try Pairing.answer(try #require(Pairing.Follower(code: "AAAAA-AAAAA")).request, code: code, houseKey: house) {
                made += 1
                return credential
            }
        }
        #expect(made == 0, "no member is made for a wrong code")
        let request = follower.request(name: "Kitchen")
        #expect(request.name == "Kitchen")
        let answer = try Pairing.answer(request, code: code, houseKey: house) { credential }
        let opened = try follower.open(answer)
        #expect(opened.house == house && opened.member == credential && answer.member == 7)
    }

    @Test func aWrongCodeIsRefusedOnBothSides() throws {
        let house = HouseKey.generate()
        let follower = try #require(Pairing.Follower(code: "AAAAA-AAAAA"))
        #expect(throws: Pairing.Failure.wrongCode) { try Pairing.answer(follower.request, code: "AAAAAAAAAB", houseKey: house) }
        // A coordinator (or one in between) that does not know the code cannot answer in its name.
        let impostor = try Pairing.answer(try #require(Pairing.Follower(code: "BBBBB-BBBBB")).request, code: "BBBBBBBBBB",
                                          houseKey: HouseKey.generate())
        #expect(throws: Pairing.Failure.wrongCode) { try follower.open(impostor) }
    }

    @Test func onlyTheFollowerThatAskedCanOpenTheAnswer() throws {
        let house = HouseKey.generate()
        let code = "CCCCCCCCCC"
        let follower = try #require(Pairing.Follower(code: code)), other = try #require(Pairing.Follower(code: code))
        let answer = try Pairing.answer(follower.request, code: code, houseKey: house)
        #expect(throws: Pairing.Failure.self) { try other.open(answer) }
        var changed = answer
        var sealed = try #require(Data(base64Encoded: answer.sealedKey))
        sealed[20] ^= 1
        changed.sealedKey = sealed.base64EncodedString()
        #expect(throws: Pairing.Failure.wrongCode) { try follower.open(changed) }
        // A stranger in between swaps in its own public key: the proof no longer fits.
        var swapped = answer
        swapped.publicKey = try #require(Pairing.Follower(code: code)).request.publicKey
        #expect(throws: Pairing.Failure.wrongCode) { try follower.open(swapped) }
        #expect(throws: Pairing.Failure.self) { try Pairing.answer(PairingRequest(publicKey: "!!", proof: "??"), code: code, houseKey: house) }
        #expect(throws: Pairing.Failure.self) { try follower.open(PairingAnswer(publicKey: "", sealedKey: "", proof: "")) }
    }
}
