import Foundation
import Testing
@testable import TuttiSecurity

/// CPace (Sendspin's pairing by code) against the reference `cpace` package: the same code,
/// session id and scalars make the same generator, shares, session key and tags (the
/// vectors: `cpace_vectors.py` in this folder), whatever the code's length (an empty one, and
/// one longer than the hash's zero padding). Two sides with the same code agree, and prove it;
/// a wrong code, a reflected share, a low-order share or a step out of turn fail.
@Suite("CPace")
struct CPaceTests {
    struct Vector: Decodable {
        let prs, sid, ci, scalar_a, scalar_b, generator, ya, yb, isk, ta, tb: String
    }

    static let vectors: [Vector] = try! JSONDecoder().decode([Vector].self, from: Data(vectorsJSON.utf8))

    static func bytes(_ hex: String) -> [UInt8] { NettleTests.bytes(hex) }

    @Test func theReferencesRunsComeOutTheSame() throws {
        #expect(Self.vectors.count == 4)
        for v in Self.vectors {
            let (prs, sid, ci) = (Self.bytes(v.prs), Self.bytes(v.sid), Self.bytes(v.ci))
            #expect(CPace.generator(prs: prs, ci: ci, sid: sid) == Self.bytes(v.generator), "prs \(v.prs)")
            var a = try CPace(role: .initiator, prs: prs, sid: sid, ci: ci, ad: Array("server".utf8), scalar: Self.bytes(v.scalar_a))
            var b = try CPace(role: .responder, prs: prs, sid: sid, ci: ci, ad: Array("client".utf8), scalar: Self.bytes(v.scalar_b))
            #expect(a.publicShare == Self.bytes(v.ya) && b.publicShare == Self.bytes(v.yb))
            try a.derive(peerShare: b.publicShare, peerAD: Array("client".utf8))
            try b.derive(peerShare: a.publicShare, peerAD: Array("server".utf8))
            #expect(a.isk == Self.bytes(v.isk) && b.isk == Self.bytes(v.isk))
            #expect(try a.tag() == Self.bytes(v.ta) && b.tag() == Self.bytes(v.tb))
            #expect(try a.verify(b.tag()) && b.verify(a.tag()))
        }
    }

    @Test func freshRunsAgreeOnlyOnTheSameCode() throws {
        let sid = Array("a session".utf8)
        var a = try CPace(role: .initiator, prs: Array("12345678".utf8), sid: sid, ad: [1])
        var b = try CPace(role: .responder, prs: Array("12345678".utf8), sid: sid, ad: [2])
        #expect(a.publicShare != b.publicShare)
        try a.derive(peerShare: b.publicShare, peerAD: [2])
        try b.derive(peerShare: a.publicShare, peerAD: [1])
        #expect(a.isk != nil && a.isk == b.isk)
        #expect(try b.verify(a.tag()) && a.verify(b.tag()))

        // A wrong code (one digit): another key, and neither tag passes.
        var c = try CPace(role: .initiator, prs: Array("12345678".utf8), sid: sid, ad: [1])
        var d = try CPace(role: .responder, prs: Array("12345679".utf8), sid: sid, ad: [2])
        try c.derive(peerShare: d.publicShare, peerAD: [2])
        try d.derive(peerShare: c.publicShare, peerAD: [1])
        #expect(c.isk != d.isk)
        #expect(try !d.verify(c.tag()) && !c.verify(d.tag()))
        #expect(try !c.verify([UInt8](repeating: 0, count: 64)) && !c.verify([]))
    }

    @Test func whatMustFailDoes() throws {
        // Its own share and data sent back to it: the tags would match themselves; refused.
        var a = try CPace(role: .initiator, prs: [1, 2, 3], sid: [9], ad: [7])
        try a.derive(peerShare: a.publicShare, peerAD: [7])
        #expect(try !a.verify(a.tag()))
        // Low-order shares (0 and 1, of Curve25519's small subgroup), a short share.
        var b = try CPace(role: .responder, prs: [1, 2, 3], sid: [9])
        #expect(throws: CPaceError.lowOrder) { try b.derive(peerShare: [UInt8](repeating: 0, count: 32), peerAD: []) }
        var c = try CPace(role: .responder, prs: [1, 2, 3], sid: [9])
        #expect(throws: CPaceError.lowOrder) { try c.derive(peerShare: [1] + [UInt8](repeating: 0, count: 31), peerAD: []) }
        var d = try CPace(role: .responder, prs: [1, 2, 3], sid: [9])
        #expect(throws: CPaceError.badShare) { try d.derive(peerShare: [1, 2], peerAD: []) }
        // Out of turn: a tag before the peer's share, a second derive.
        let e = try CPace(role: .initiator, prs: [1], sid: [2])
        #expect(throws: CPaceError.outOfTurn) { try e.tag() }
        #expect(throws: CPaceError.outOfTurn) { try d.derive(peerShare: e.publicShare, peerAD: []) }
        #expect(throws: CPaceError.badShare) { try CPace(role: .initiator, prs: [1], sid: [2], scalar: [1]) }
    }

    @Test func lengthsAreLEB128() {
        #expect(CPace.lengthPrefix(0) == [0])
        #expect(CPace.lengthPrefix(127) == [127])
        #expect(CPace.lengthPrefix(128) == [0x80, 0x01])
        #expect(CPace.lengthPrefix(300) == [0xAC, 0x02])
    }
}

/// Made by `python3 cpace_vectors.py` with cpace 0.1.0.
private let vectorsJSON = #"""
[
 {
  "prs": "3132333435363738",
  "sid": "73656e647370696e2d706169722d70616b652d7631000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f0000000100000001",
  "ci": "",
  "scalar_a": "1111111111111111111111111111111111111111111111111111111111111111",
  "scalar_b": "2222222222222222222222222222222222222222222222222222222222222222",
  "generator": "9a22716e3cfcb396faa351a4566b792162e2c24c1ce4105082d86829a135e055",
  "ya": "94a469fff691098c3c46ec11c818672cc2a242e3ed66e67fc441530c41fa9448",
  "yb": "64a5d65697db5b8a1ff6182e080a63a8f5c0c3e533e79ad59ff772e7cc8b342f",
  "isk": "f8fc6377dcad8be8e91282043b5286a44c2aedf503583c47019056118bcc1cfb1eafa40098cf7fb71df4aee5b809f85516a142446b8dcac71fed19722cda1be1",
  "ta": "fbed9884c4ea874d10a77ee1b8f29e06d4e0b7c6296e8d94386ec1c3823894879ff010157186b296199f98cae29d8a2e8ef138e642fcab53c518cf9dc8b0e377",
  "tb": "f887ed2ca51f79e69e83ea90f4edd7eeb562e2008a7640ea28019148d6666780078a24256a5824087ad828907658ef34b937793f9a34f6db28c71953a4dcc747"
 },
 {
  "prs": "363534333231",
  "sid": "73656e647370696e2d706169722d70616b652d7631000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f0000000100000002",
  "ci": "",
  "scalar_a": "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
  "scalar_b": "202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f",
  "generator": "2acfe9c23bf71c0f68085fcd2fab9595bb70ec3aee5c8657c0b955663ddb043c",
  "ya": "7769e417aeee51e56f4caa523403dcf831168a7fd4b26dc7066cacd518888e51",
  "yb": "89c9e98ca218a3918598497a32f482fed3454150e263650622af141775e09621",
  "isk": "22775140f4682d91d61d57790fd97bd2de9f6d4b33d3e32c0bc27105a4774db16059840213956676a34bae03c9910f70f98d08cb631b0433b24c762ffe09c732",
  "ta": "07c5829fca4d2a493ebc8a6c125706d70e38f8c12f1f8a80ddb6f76a38088f63d0bece31d61052c057420b79bcea95a3655e5edad8a12bd330195ee22bc33634",
  "tb": "cbb4470a7830a64d2720b1077db1757abf8f6c38f170409986525ad00adae00c0410590189e1e06fe9e60ad8ec75dd262447d69884895cebacec6d66cd373448"
 },
 {
  "prs": "",
  "sid": "",
  "ci": "6368616e6e656c",
  "scalar_a": "3333333333333333333333333333333333333333333333333333333333333333",
  "scalar_b": "4444444444444444444444444444444444444444444444444444444444444444",
  "generator": "d085d82ec9edc66e91df2afc59ffcd003115407fc6295ea1fad4080c8ac53d0a",
  "ya": "59ea39254ba91b213de974e4faae0c9bde4ec28a5862e5ca69185cc7d7266879",
  "yb": "4a8eab448644351dee5f5ad533278e81df92bf89d2b188e54fd9b6020d124544",
  "isk": "eaa355fb3de1127479d4363239c81d5bf1c7c43735eb7e35cba6b4a725f463984d7e3f5b30084209aa0db72979d3ff3f0b9d885a156274f0fb64c355da953614",
  "ta": "895ca5399758f9e498ed167e2126ca7cb2b738cc5f656142ea0330892e4aa8e72425c1403dfb4a8c8d0623e6b456d43c29b98eb4eb9c1415baf1105c694324bd",
  "tb": "8a4af86eabd000f01aa9be4764fb88641ff716b920bf4c4c33e130bc0624ac9652a0d51c5bcdda0ae9f811e53dc357fe04e89d9c8d9c4a546c9a85db02a32b11"
 },
 {
  "prs": "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9fa0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebfc0c1c2c3c4c5c6c7",
  "sid": "73656e647370696e2d706169722d70616b652d7631000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f0000000100000001",
  "ci": "",
  "scalar_a": "5555555555555555555555555555555555555555555555555555555555555555",
  "scalar_b": "6666666666666666666666666666666666666666666666666666666666666666",
  "generator": "bc397d7097844c6cd705b4e8b924c4ff7e031df2318a7089db7f0f111b2da208",
  "ya": "9f921606aefceeb9597062ec5da4d11d1bd071be2f00547009f4d4aafe549416",
  "yb": "bd21ea67bceac33125b8a766950cdb8bf56010d591651e437c8d28efd9ba1126",
  "isk": "2d89cbef0b43c080a3efea39387eaec5f483e31488154ca7adb0c176f966a2de53b9be074c6fb143313f44c2e477ce8dba668852e143efd35275913a7afbcf6a",
  "ta": "fdf1ec695c4ec7ae7648c899ef9081c04cab4d576ed601ef4adf0b54791d5b81d2317b36984c817cf6029e7e6a8d6db243bf3afb629319ed5b99511665d72163",
  "tb": "245788543653a607658af1060cfe449ebc671c91321aca247ac08ad9d4483afb1c59bbb65926257fa163431e736ad25c4e3ebf7a6bb1a259dffa6e006448b446"
 }
]

"""#
