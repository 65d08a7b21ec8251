import Testing
@testable import TuttiCore

/// RFC 6455's framing, as the follower's Sendspin client speaks it: its own frames masked,
/// the server's read in every length form, and what a server may not send refused.
@Suite("WebSocket frames")
struct WebSocketFrameTests {
    @Test func everyLengthFormReadsBackAndAClientsFrameIsMasked() throws {
        for size in [0, 1, 125, 126, 65_535, 65_536, 70_000] {
            let payload = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31) }
            let frame = WebSocketFrame(opcode: WebSocketFrame.binary, payload: payload)
            let bytes = frame.encode(mask: nil)
            let header = size < 126 ? 2 : size <= 65_535 ? 4 : 10
            #expect(bytes.count == header + size)
            let parsed = try #require(try WebSocketFrame.parse(bytes[...], limit: 1 << 20))
            #expect(parsed.frame == frame && parsed.length == bytes.count)
            // Not all here yet: nothing, at any cut.
            for cut in [1, header - 1, bytes.count - 1] where cut > 0 && cut < bytes.count {
                #expect(try WebSocketFrame.parse(bytes[..<cut], limit: 1 << 20) == nil)
            }
            // Masked (RFC 6455 §5.3): the mask bit, the key, the payload XORed with it.
            let masked = frame.encode(mask: [1, 2, 3, 4])
            #expect(masked[1] & 0x80 != 0 && masked.count == header + 4 + size)
            if size > 4 { #expect(masked[header + 4] == payload[0] ^ 1 && masked[header + 7] == payload[3] ^ 4) }
        }
        // RFC 6455 §5.7: a single-frame unmasked text message "Hello".
        #expect(WebSocketFrame(opcode: WebSocketFrame.text, payload: Array("Hello".utf8)).encode(mask: nil)
                == [0x81, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f])
        // And masked with 37 fa 21 3d.
        #expect(WebSocketFrame(opcode: WebSocketFrame.text, payload: Array("Hello".utf8)).encode(mask: [0x37, 0xfa, 0x21, 0x3d])
                == [0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58])
    }

    @Test func whatAServerMayNotSendIsRefused() {
        #expect(throws: WebSocketFrame.Failure.masked) { try WebSocketFrame.parse([0x81, 0x85, 1, 2, 3, 4, 0, 0, 0, 0, 0][...], limit: 100) }
        #expect(throws: WebSocketFrame.Failure.reserved(0x40)) { try WebSocketFrame.parse([0xC1, 0x00][...], limit: 100) }
        #expect(throws: WebSocketFrame.Failure.reserved(0x3)) { try WebSocketFrame.parse([0x83, 0x00][...], limit: 100) }
        #expect(throws: WebSocketFrame.Failure.badControl) { try WebSocketFrame.parse([0x09, 0x00][...], limit: 100) }
        #expect(throws: WebSocketFrame.Failure.badControl) { try WebSocketFrame.parse([0x89, 126, 0, 200][...], limit: 1_000) }
        #expect(throws: WebSocketFrame.Failure.tooLarge(1 << 40)) {
            try WebSocketFrame.parse([0x82, 127, 0, 0, 1, 0, 0, 0, 0, 0][...], limit: 1 << 20)
        }
    }
}
