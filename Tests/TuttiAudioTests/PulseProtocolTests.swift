import Foundation
import Testing
import TuttiCore
@testable import TuttiAudio

@Suite("PulseAudio's native protocol")
struct PulseProtocolTests {
    @Test func tagsAreWrittenAsTheServerReadsThem() {
        var w = PulseTagWriter(command: .getPlaybackLatency, tag: 7)
        w.u32(3)
        w.timeval(seconds: 0x0102_0304, microseconds: 5)
        w.string("roomA")
        w.string(nil)
        w.bool(true)
        w.sampleSpec(format: 5, channels: 2, rate: 48_000)
        w.volumes([0x10000])
        #expect(w.bytes == [
            0x4C, 0, 0, 0, 14, 0x4C, 0, 0, 0, 7,  // command, tag
            0x4C, 0, 0, 0, 3,
            0x54, 1, 2, 3, 4, 0, 0, 0, 5,
            0x74] + Array("roomA".utf8) + [0, 0x4E, 0x31,
            0x61, 5, 2, 0, 0, 0xBB, 0x80,
            0x76, 1, 0, 1, 0, 0])
    }

    @Test func propertiesRoundTripWithTheirTerminatingNul() throws {
        var w = PulseTagWriter(command: .setClientName, tag: 1)
        w.properties([("application.name", "tutti"), ("media.role", "music")])
        var r = PulseTagReader(w.bytes)
        #expect(try r.u32() == PulseProtocol.Command.setClientName.rawValue)
        #expect(try r.u32() == 1)
        #expect(try r.properties() == ["application.name": "tutti", "media.role": "music"])
        #expect(r.atEnd)
        // "tutti" goes as 6 bytes, its NUL included, as PulseAudio stores string properties.
        let value = try #require(w.bytes.firstRange(of: Array("tutti".utf8)))
        #expect(w.bytes[value.lowerBound - 5..<value.lowerBound] == [0x78, 0, 0, 0, 6])
    }

    @Test func aLatencyAnswerIsReadFieldByField() throws {
        // As the server writes it: usec, usec, bool, two timevals, two s64, two u64.
        var bytes: [UInt8] = [0x55] + be64(59_000) + [0x55] + be64(0) + [0x31]
        bytes += [0x54] + be32(100) + be32(1) + [0x54] + be32(100) + be32(2)
        bytes += [0x72] + be64(UInt64(bitPattern: 96_000)) + [0x72] + be64(UInt64(bitPattern: -8)) + [0x52] + be64(0) + [0x52] + be64(9)
        var r = PulseTagReader(bytes)
        #expect(try r.u64() == 59_000)
        #expect(try r.u64() == 0)
        #expect(try r.bool())
        #expect(try r.timeval() == (100, 1))
        #expect(try r.timeval() == (100, 2))
        #expect(try r.s64() == 96_000)
        #expect(try r.s64() == -8)
        try r.skip()
        try r.skip()
        #expect(r.atEnd)
    }

    @Test func malformedTagStructuresAreErrorsNotCrashes() {
        let cases: [[UInt8]] = [
            [],  // nothing
            [0x4C, 0, 0],  // a word cut short
            [0x74, 0x61, 0x62],  // a string without its NUL
            [0x50, 0x74, 0x6B, 0, 0x4C, 0, 0, 0, 9, 0x78, 0, 0, 0, 9, 1],  // a property longer than what is left
            [0x50, 0x74, 0x6B, 0, 0x4C, 0, 0, 0, 2, 0x78, 0, 0, 0, 1, 1],  // a property whose lengths disagree
            [0x78, 0xFF, 0xFF, 0xFF, 0xFF],  // an arbitrary of 4 GB
            [0x3F],  // an unknown tag
        ]
        for bytes in cases {
            var a = PulseTagReader(bytes)
            var b = PulseTagReader(bytes)
            var c = PulseTagReader(bytes)
            #expect(throws: PulseProtocolError.self) { _ = try a.u32() }
            #expect(throws: PulseProtocolError.self) {
                if bytes.first == 0x74 { _ = try b.string() } else if bytes.first == 0x50 { _ = try b.properties() } else { try b.skip() }
            }
            #expect(throws: PulseProtocolError.self) { _ = try c.bool() }
        }
        var wrong = PulseTagReader([0x31])
        #expect(throws: PulseProtocolError.self) { _ = try wrong.u32() }  // a boolean where a word belongs
    }

    @Test func framesAreCutFromWhateverPiecesArrive() throws {
        var w = PulseTagWriter(command: .request, tag: 0xFFFF_FFFF)
        w.u32(0)
        w.u32(7_680)
        var stream: [UInt8] = []
        PulseFrameReader.appendDescriptor(length: w.bytes.count, channel: PulseProtocol.commandChannel, to: &stream)
        stream += w.bytes
        let two = stream + stream
        var reader = PulseFrameReader()
        var frames: [PulseFrameReader.Frame] = []
        for byte in two {  // one byte at a time: the worst split
            [byte].withUnsafeBytes { reader.append($0) }
            while let frame = try reader.next() { frames.append(frame) }
        }
        #expect(frames.count == 2)
        #expect(frames.allSatisfy { $0.channel == PulseProtocol.commandChannel && $0.payload == w.bytes })
    }

    @Test func aFrameLargerThanAnyServerSendsIsRefused() {
        var reader = PulseFrameReader()
        var descriptor: [UInt8] = []
        PulseFrameReader.appendDescriptor(length: PulseProtocol.largestFrame + 1, channel: 0, to: &descriptor)
        descriptor.withUnsafeBytes { reader.append($0) }
        #expect(throws: PulseProtocolError.self) { _ = try reader.next() }
    }

    @Test func theServerIsLookedForWhereItsClientsLook() {
        func sockets(_ env: [String: String]) -> [String] { PulseServerLocation.sockets { env[$0] } }
        #expect(sockets(["PULSE_SERVER": "unix:/run/a/native"]) == ["/run/a/native"])
        #expect(sockets(["PULSE_SERVER": "tcp:host:4713 /tmp/b {0123}unix:/tmp/c"]) == ["/tmp/b", "/tmp/c"])
        #expect(sockets(["PULSE_SERVER": "tcp:host"]).isEmpty)
        #expect(sockets(["XDG_RUNTIME_DIR": "/run/user/1000"]) == ["/run/user/1000/pulse/native", "/var/run/pulse/native"])
        #expect(sockets(["PULSE_RUNTIME_PATH": "/x", "XDG_RUNTIME_DIR": "/y"]) == ["/x/native", "/var/run/pulse/native"])
        #expect(sockets([:]) == ["/var/run/pulse/native"])
        let files = PulseServerLocation.cookieFiles(environment: { ["XDG_CONFIG_HOME": "/c"][$0] }, home: "/h")
        #expect(files == ["/c/pulse/cookie", "/h/.config/pulse/cookie", "/h/.pulse-cookie"])
        #expect(PulseServerLocation.cookieFiles(environment: { ["PULSE_COOKIE": "/k"][$0] }, home: "/h") == ["/k"])
    }

    /// Twenty thousand inputs, mutated from what a server sends and cut at random points,
    /// through the frame reader and every read: each one ends in a value or an error.
    @Test func mutatedServerFramesNeverCrashTheReaders() {
        var rng = SeededRandom(seed: 35)  // a failure repeats
        var request = PulseTagWriter(command: .request, tag: 0xFFFF_FFFF)
        request.u32(0)
        request.u32(7_680)
        var event = PulseTagWriter(command: .playbackStreamEvent, tag: 0xFFFF_FFFF)
        event.u32(0)
        event.string("request-cork")
        event.properties([("media.role", "phone")])
        var latency = PulseTagWriter(command: .reply, tag: 9)
        latency.timeval(seconds: 1, microseconds: 2)
        latency.sampleSpec(format: 5, channels: 2, rate: 48_000)
        latency.arbitrary([1, 2, 3])
        latency.channelMap([1, 2])
        latency.volumes([0x10000, 0x10000])
        let seeds = [request.bytes, event.bytes, latency.bytes]
        var frames = 0
        for _ in 0..<20_000 {
            var payload = seeds[Int(rng.next() % 3)]
            for _ in 0..<Int(rng.next() % 4) where !payload.isEmpty {
                payload[Int(rng.next() % UInt64(payload.count))] = UInt8(truncatingIfNeeded: rng.next())
            }
            if rng.next() % 4 == 0 { payload = Array(payload.prefix(Int(rng.next() % UInt64(payload.count + 1)))) }
            var stream: [UInt8] = []
            PulseFrameReader.appendDescriptor(length: payload.count, channel: PulseProtocol.commandChannel, to: &stream)
            stream += payload
            if rng.next() % 8 == 0 { stream[Int(rng.next() % 4)] = UInt8(truncatingIfNeeded: rng.next()) }  // its length
            var reader = PulseFrameReader()
            var at = 0
            while at < stream.count {
                let n = min(stream.count - at, 1 + Int(rng.next() % 40))
                stream[at..<at + n].withUnsafeBytes { reader.append($0) }
                at += n
                while let frame = try? reader.next() {
                    frames += 1
                    var t = PulseTagReader(frame.payload)
                    // The product ends the connection at the first error; so does this.
                    reading: while !t.atEnd {
                        do {
                            switch rng.next() % 5 {
                            case 0: _ = try t.u32()
                            case 1: _ = try t.string()
                            case 2: _ = try t.properties()
                            case 3: _ = try t.s64()
                            default: try t.skip()
                            }
                        } catch {
                            break reading
                        }
                    }
                }
            }
        }
        #expect(frames > 10_000)
    }

    private func be32(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: v >> (24 - 8 * $0)) } }
    private func be64(_ v: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: v >> (56 - 8 * $0)) } }
}

/// A server that answers each frame it reads as `answer` says, on a socket file of its
/// own: what a broken or unwelcoming sound server does, short of PulseAudio itself.
final class ScriptedPulseServer: @unchecked Sendable {
    let path: String
    private let listener: Int32
    private let answer: @Sendable (_ frameIndex: Int, _ tag: UInt32) -> [UInt8]?

    init(answer: @escaping @Sendable (Int, UInt32) -> [UInt8]?) throws {
        path = NSTemporaryDirectory() + "tutti-pulse-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        self.answer = answer
        listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard rc == 0, listen(listener, 1) == 0 else { throw POSIXError(.EADDRINUSE) }
        Thread.detachNewThread { [self] in serve() }
    }

    deinit {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        unlink(path)
    }

    private func serve() {
        let fd = accept(listener, nil, nil)
        guard fd >= 0 else { return }
        defer { close(fd) }
        var index = 0
        while true {
            var descriptor = [UInt8](repeating: 0, count: 20)
            guard recv(fd, &descriptor, 20, Int32(MSG_WAITALL)) == 20 else { return }
            let length = Int(descriptor[0]) << 24 | Int(descriptor[1]) << 16 | Int(descriptor[2]) << 8 | Int(descriptor[3])
            var payload = [UInt8](repeating: 0, count: length)
            guard length == 0 || recv(fd, &payload, length, Int32(MSG_WAITALL)) == length else { return }
            let tag = payload.count >= 10 ? payload[6..<10].reduce(0) { $0 << 8 | UInt32($1) } : 0
            guard let reply = answer(index, tag) else { return }
            index += 1
            _ = reply.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }
    }

    static func frame(_ payload: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        PulseFrameReader.appendDescriptor(length: payload.count, channel: PulseProtocol.commandChannel, to: &out)
        return out + payload
    }
}

extension PulseOutput {
    /// An output on the server `PULSE_SERVER` would name, with no cookie.
    static func open(server: String, sink: String?) throws(AudioError) -> PulseOutput {
        let environment = ["PULSE_SERVER": server, "PULSE_COOKIE": "/nonexistent/cookie"]
        return try PulseOutput(sink: sink, clock: TestClock(), clientName: "test", streamName: "test", sinkLatencyMilliseconds: 20,
                               requestMilliseconds: 40, timingMilliseconds: 25, onlyIfRunning: true, environment: { environment[$0] })
    }
}

@Suite("PulseAudio output against a broken server")
struct PulseOutputFailureTests {
    private func open(_ server: ScriptedPulseServer) -> AudioError? {
        do {
            _ = try PulseOutput.open(server: "unix:" + server.path, sink: "roomA")
            return nil
        } catch {
            return error
        }
    }

    @Test func aServerThatRefusesTheClientSaysSo() throws {
        let server = try ScriptedPulseServer { _, tag in
            var w = PulseTagWriter(command: .error, tag: tag)
            w.u32(1)  // access denied
            return ScriptedPulseServer.frame(w.bytes)
        }
        let error = try #require(open(server))
        #expect("\(error)".contains("connect failed: Access denied"), "\(error)")
    }

    @Test func aMissingSinkIsNamed() throws {
        let server = try ScriptedPulseServer { index, tag in
            var w = PulseTagWriter(command: index < 2 ? .reply : .error, tag: tag)
            w.u32(index == 0 ? 35 : index == 1 ? 4 : 5)  // version, client index, then "no such entity"
            return ScriptedPulseServer.frame(w.bytes)
        }
        let error = try #require(open(server))
        #expect("\(error)".contains("connect to sink roomA failed: No such entity"), "\(error)")
    }

    @Test func aServerTooOldForTheStreamsRequestIsNamedAsSuch() throws {
        let server = try ScriptedPulseServer { _, tag in
            var w = PulseTagWriter(command: .reply, tag: tag)
            w.u32(15 | 0x8000_0000)  // PulseAudio 0.9.15, offering shared memory
            return ScriptedPulseServer.frame(w.bytes)
        }
        let error = try #require(open(server))
        #expect("\(error)".contains("protocol version 15; 21 (PulseAudio 1.0) or later is needed"), "\(error)")
    }

    @Test func garbageFromTheServerIsAnErrorNotACrash() throws {
        for reply in [[UInt8](repeating: 0xFF, count: 64), ScriptedPulseServer.frame([0x4C, 0, 0]), ScriptedPulseServer.frame([0x74, 1, 2])] {
            let server = try ScriptedPulseServer { _, _ in reply }
            let error = try #require(open(server))
            #expect("\(error)".contains("PulseAudio connect failed"), "\(error)")
        }
    }

    @Test func aServerThatHangsUpOrSaysNothingIsAnError() throws {
        let silent = try ScriptedPulseServer { _, _ in [] }
        #expect("\(try #require(open(silent)))".contains("did not answer"))
        let gone = try ScriptedPulseServer { _, _ in nil }
        #expect("\(try #require(open(gone)))".contains("connect failed"))
    }

    @Test func noServerAtAllIsAnError() throws {
        #expect(throws: AudioError.self) { _ = try PulseOutput.open(server: "unix:/nonexistent/tutti/native", sink: nil) }
        #expect(throws: AudioError.self) { _ = try PulseOutput.open(server: "tcp:localhost", sink: nil) }
    }
}
