import Foundation
import TuttiAPI
import TuttiCodecs
import TuttiControl
import TuttiCore
import TuttiMedia
import TuttiNet
import TuttiSecurity
import TuttiSendspin

/// libFuzzer's entry point for every parser of outside input (bench/fuzz/run builds it with
/// `-sanitize=fuzzer` and runs each target). TUTTI_FUZZ_TARGET names the parser. Beyond
/// "must not crash", some targets check a property: what one side seals the other opens to
/// the same bytes; a message that decodes encodes back to itself.
let target = ProcessInfo.processInfo.environment["TUTTI_FUZZ_TARGET"] ?? "rtp"
let master = HouseKey(bytes: Array(repeating: 7, count: 32))!.stream
let members = [MemberKey(id: 1, secret: Array(repeating: 1, count: 32))!, MemberKey(id: 2, secret: Array(repeating: 2, count: 32))!]

/// libFuzzer's driver, called from the entry point SwiftPM gives an executable target (it
/// renames `main` to `tutti_fuzz_main`), so that libFuzzer's own `main` is not needed.
@_silgen_name("LLVMFuzzerRunDriver")
func runDriver(_ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
               _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> CInt

@_cdecl("tutti_fuzz_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var count = argc
    var arguments = argv
    return runDriver(&count, &arguments) { data, size in fuzz(data, size) }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    switch target {
    case "rtp": rtp(bytes)
    case "rtcp": rtcp(bytes)
    case "srtp": srtp(bytes)
    case "clock": clock(bytes)
    case "id3": _ = ID3Reader.read(bytes); if bytes.count >= 128 { _ = ID3Reader.readV1(Array(bytes.suffix(128))) }
    case "lrc": lrc(bytes)
    case "playlist": playlist(bytes)
    case "icy": icy(bytes)
    case "toml": toml(bytes)
    case "media": media(bytes)
    case "hls": hls(bytes)
    case "mp4": mp4(bytes)
    case "api": api(bytes)
    case "sendspin": sendspin(bytes)
    case "payload": payload(bytes)
    default: fatalError("unknown TUTTI_FUZZ_TARGET \(target)")
    }
    return 0
}

func rtp(_ bytes: [UInt8]) {
    _ = RTPPacket.headerLength(of: bytes)
    _ = RTPPacket.rollover(in: bytes)
    _ = RTPPacket.sendTimeOffset(in: bytes)
    for slot in RTPPacket.memberTagSlots(in: bytes) {
        precondition(slot.at >= 16 && slot.at + RTPPacket.memberTagSize <= bytes.count, "a member tag's slot outside the packet")
    }
    _ = members[0].streamTag.check(bytes)
    guard let packet = try? RTPPacket.decode(bytes) else { return }
    if packet.payloadType == RTPPacket.retransmissionPayloadType {
        _ = try? packet.originalFromRetransmission(ssrc: 1)
    }
}

func rtcp(_ bytes: [UInt8]) {
    if let nack = try? GenericNACK.decode(bytes) { _ = nack.encode() }
    _ = try? RTCPSenderReport.decode(bytes)
}

func srtp(_ bytes: [UInt8]) {
    var receiver = SRTPContext(master)
    _ = try? receiver.unprotectRTP(bytes, member: members[0].streamTag)
    _ = try? receiver.unprotectRTP(bytes)
    _ = try? receiver.unprotectRTCP(bytes)
    // What the sender seals, the receiver opens to the same bytes.
    var sender = SRTPContext(master)
    var fresh = SRTPContext(master)
    if RTPPacket.headerLength(of: bytes) != nil {
        let rollover = RTPPacket.rollover(in: bytes) ?? 0
        if let sealed = try? sender.protectRTP(bytes, rollover: rollover) {
            let opened = try? fresh.unprotectRTP(sealed)
            precondition(opened == bytes, "SRTP did not round-trip")
        }
    }
    // Whatever a packet carries, tagged by the coordinator for both members, each finds its tag true.
    if let packet = try? RTPPacket.decode(bytes) {
        var tagged = packet.encode(taggedFor: members.map(\.id))
        StreamTagKey.sign(&tagged, with: members.map(\.streamTag))
        for member in members { precondition(member.streamTag.check(tagged) == nil, "a member's tag did not check out") }
    }
    if bytes.count >= 8, bytes[0] >> 6 == 2, let sealed = try? sender.protectRTCP(bytes) {
        precondition((try? fresh.unprotectRTCP(sealed)) == bytes, "SRTCP did not round-trip")
    }
}

func clock(_ bytes: [UInt8]) {
    // The body parse that runs once a tag has checked out, then the round trip.
    guard let opened = try? ControlMessage.decodeOpened(bytes) else { return }
    let message = opened.message
    let again = message.encode(stamp: opened.stamp, member: opened.member, sequence: opened.sequence)
    guard let reread = try? ControlMessage.decodeOpened(again) else { preconditionFailure("a decoded message did not decode again") }
    precondition(reread.member == opened.member && reread.stamp == opened.stamp && reread.sequence == opened.sequence,
                 "a header did not survive a round trip")
    if case .roomReport = message { return }  // figures are rounded to their fields
    precondition(reread.message == message, "a message did not survive a round trip")
}

func lrc(_ bytes: [UInt8]) {
    let text = LyricsText.decode(bytes, legacy: { LegacyText.decode($0, from: $1) }).text
    let lyrics = LRCParser.parse(text)
    let cursor = LyricCursor(lyrics: lyrics)
    for t in stride(from: -1_000, through: 600_000, by: 7_000) { _ = cursor.position(atMilliseconds: t) }
}

/// A file of any format through FFmpeg's demuxers and decoders and the decoder's own
/// trimming: the first byte says whether the input can seek (a file) or not (a stream).
func media(_ bytes: [UInt8]) {
    guard let first = bytes.first else { return }
    let input = MemoryInput(Array(bytes.dropFirst()), canSeek: first & 1 == 0)
    guard let decoder = try? MediaDecoder(input: input, name: "fuzz", readPictures: true, seekingToOpen: first & 2 == 0) else { return }
    var pcm: [Float] = []
    for _ in 0..<64 {
        pcm.removeAll(keepingCapacity: true)
        guard let n = try? decoder.read(into: &pcm), n > 0 else { break }
        precondition(pcm.count == n * 2, "a read gave \(pcm.count) samples for \(n) frames")
    }
    if input.canSeek {
        _ = try? decoder.seek(to: TrackFrames(Int64(4_800), rate: 48_000))
        pcm.removeAll(keepingCapacity: true)
        _ = try? decoder.read(into: &pcm)
    }
    _ = decoder.takeChangedTags()
}

/// HLS playlists, multivariant and media, against a URL.
func hls(_ bytes: [UInt8]) {
    let text = String(decoding: bytes, as: UTF8.self)
    // A playlist out of range is refused (thrown), never a trap.
    guard let playlist = try? HLSPlaylist.parse(text, base: "https://radio.example/live/index.m3u8?token=1") else { return }
    switch playlist {
    case let .multivariant(variants): _ = HLSPlaylist.choose(variants)
    case let .media(media):
        // Where the download starts indexes the list (a start one past its end, allowed here
        // once, was the crash a station's zero target duration made).
        let start = media.startIndex
        precondition(media.segments.isEmpty ? start == 0 : media.segments.indices.contains(start), "a start outside the playlist")
        let wait = media.reloadWait(fresh: media.segments.count % 2 == 0)
        precondition(wait >= 0.5 && wait <= 30, "a reload wait out of range")
        if let last = media.segments.last { _ = last.sequence + 1 }
    }
}

/// MP4 box trees, for their edit list.
func mp4(_ bytes: [UInt8]) {
    _ = MP4Timing.read(size: Int64(bytes.count)) { offset, count in
        guard offset >= 0, offset < Int64(bytes.count), count >= 0 else { return nil }
        return Array(bytes[Int(offset)..<min(bytes.count, Int(offset) + count)])
    }
}

func api(_ bytes: [UInt8]) {
    guard let first = bytes.first else { return }
    let body = Array(bytes.dropFirst())
    switch first % 8 {
    case 0: _ = try? RequestBody.decode(SeekRequest.self, body).command()
    case 1: _ = try? RequestBody.decode(SkipRequest.self, body).command()
    case 2: _ = try? RequestBody.decode(AddRequest.self, body)
    case 3: _ = try? RequestBody.decode(VolumeRequest.self, body)
    case 4: _ = try? RequestBody.decode(RoomUpdate.self, body)
    case 5:
        _ = try? RequestBody.decode(PairingRequest.self, body)
        // A zone's name, as `POST /zones` and `PUT /zones/{zone}` take it.
        if let zone = try? RequestBody.decode(ZoneRequest.self, body) {
            var zones = ZoneList()
            if let id = try? zones.add(zone.name) { _ = try? zones.rename(id, to: zone.name + "x") }
            _ = try? zones.find(zone.name)
        }
    case 6:
        _ = try? RequestBody.decode(LoopRequest.self, body)
        _ = try? RequestBody.decode(ReplayGainUpdate.self, body).applied(to: .standard)
        _ = try? RequestBody.decode(PartyRequest.self, body)
    default:
        // A WebSocket message, as the event stream reads it.
        let text = String(decoding: body, as: UTF8.self)
        if JSONNesting.isShallow(text) { _ = try? JSONDecoder().decode(TimeExchange.self, from: Data(text.utf8)) }
    }
}

/// Playlists in both formats, against a folder and a URL (RFC 3986 resolution), and sniffed.
func playlist(_ bytes: [UInt8]) {
    let text = String(decoding: bytes, as: UTF8.self)
    for format in [PlaylistParser.Format.m3u, .pls] {
        _ = PlaylistParser.parse(text, format: format, base: "/music")
        for entry in PlaylistParser.parse(text, format: format, base: "http://host:8000/lists/a/today.m3u?x=1") {
            precondition(entry.location.contains("://") || entry.location.hasPrefix("pcm:"), "a relative entry left unresolved")
        }
    }
    _ = PlaylistParser.Format(sniffing: text[...])
}

/// An ICY stream: the first two bytes choose the metadata interval, the third the chunk size
/// it arrives in; the audio that comes out is the stream without its metadata blocks.
func icy(_ bytes: [UInt8]) {
    guard bytes.count >= 3, var demuxer = IcyDemuxer(interval: Int(bytes[0]) << 8 | Int(bytes[1]) + 1) else { return }
    let chunk = Int(bytes[2]) + 1
    var audio: [UInt8] = []
    var index = 3
    while index < bytes.count {
        let end = min(bytes.count, index + chunk)
        for block in demuxer.push(bytes[index..<end], audio: &audio) {
            _ = block.streamTitle
            _ = block.artistAndTitle
        }
        index = end
    }
    precondition(audio.count <= bytes.count - 3, "more audio than bytes")
}

/// Configuration files: read, or refused at a place inside the document.
func toml(_ bytes: [UInt8]) {
    let text = String(decoding: bytes, as: UTF8.self)
    do {
        let entries = try TOMLReader.read(text)
        let lines = text.utf8.filter { $0 == 10 }.count + 1
        for entry in entries { precondition((1...lines).contains(entry.line), "an entry outside the document") }
        precondition(Set(entries.map(\.key)).count == entries.count, "a key read twice")
    } catch {
        precondition(error.line >= 1 && error.column >= 1, "a failure at no place")
    }
}

/// A Sendspin session's keys, made once (X25519 is slow for a fuzzer): a fixed client's
/// Noise handshake with a fixed server, whose transport ciphers every input starts from.
let sendspinCiphers: (server: NoiseCipher, client: NoiseCipher) = {
    var server = try! NoiseHandshake(suite: .chaChaPoly, initiator: true, staticPrivate: Array(repeating: 1, count: 32),
                                     remoteStatic: X25519.publicKey(of: Array(repeating: 2, count: 32)), prologue: [],
                                     psk: SendspinPSK.sentinel.key)
    var client = try! NoiseHandshake(suite: .chaChaPoly, initiator: false, staticPrivate: Array(repeating: 2, count: 32),
                                     remoteStatic: X25519.publicKey(of: Array(repeating: 1, count: 32)), prologue: [])
    _ = try! client.readMessage(try! server.writeMessage())
    try! client.setPSK(SendspinPSK.sentinel.key)
    _ = try! server.readMessage(try! client.writeMessage())
    return (try! server.transport().send, try! client.transport().receive)
}()

/// What a Sendspin peer sends: the opening's texts (client/init, server/init, noise/handshake)
/// to both sides, an audio chunk's header and a client/time; and a run of frames, each
/// sealed with the session's key, through the transport's fragment rules (the first byte
/// of each length-prefixed piece is the plaintext's type, so fragments are reached): a
/// binary message that completes never holds more than what was sent.
func sendspin(_ bytes: [UInt8]) {
    let text = String(decoding: bytes, as: UTF8.self)
    var server = SendspinServerHandshake(identity: SendspinIdentity(privateKey: Array(repeating: 1, count: 32)))
    _ = try? server.receiveClientInit(text) { _ in .sentinel }
    _ = try? server.receiveHandshake(text)
    var client = SendspinClientHandshake(identity: SendspinIdentity(privateKey: Array(repeating: 2, count: 32)))
    _ = try? client.receiveServerInit(text)
    _ = SendspinAudioChunk(bytes: bytes)
    _ = SendspinTime.clientTransmitted(in: text)
    // The session's messages, to both sides (a player's to tutti's server, a server's to the
    // follower as a player), and the WebSocket frames the follower reads.
    var served = SendspinServerSession(serverName: "fuzz")
    _ = try? served.receive(#"{"type":"client/hello","payload":{"name":"p","supported_roles":["player@v1"],"player@v1_support":{"supported_formats":[{"codec":"pcm","channels":2,"sample_rate":48000,"bit_depth":16}]}}}"#, received: 0) { 0 }
    _ = try? served.receive(text, received: 0) { 0 }
    _ = served.audio([0, 0, 0, 0], channels: 2, heard: 1, now: 0)
    var player = SendspinClientSession(name: "p", formats: [SendspinFormat(codec: "pcm", channels: 2, sampleRate: 48_000, bitDepth: 16)])
    _ = try? player.receive(text)
    _ = player.receive(binary: bytes)
    // Pairing: a player's message to tutti's server at each step of an attempt by each method
    // (the code entered first where one is awaited), a server's to the follower's side, and a
    // token or a code as typed.
    for method in [SendspinPairingServer.Method.dynamicCode, .staticCode, .pairingPSK] {
        var pairing = SendspinPairingServer(method: method, index: 1, handshakeHash: Array(repeating: 3, count: 32), suite: .chaChaPoly,
                                            pairingPSK: Array(repeating: 4, count: 32))
        _ = try? pairing.receive(text)
        if pairing.awaitsCode { _ = try? pairing.enter(code: text) }
        _ = try? pairing.receive(text)
    }
    var pairingClient = SendspinPairingClient(index: 1, handshakeHash: Array(repeating: 3, count: 32), suite: .aesGCM)
    _ = try? pairingClient.receive(text)
    _ = try? pairingClient.receive(text)
    _ = SendspinPairing.decodePSKToken(text)
    _ = SendspinPairing.decodeCodeToken(text)
    _ = SendspinPairing.grouped(text)
    if let (frame, length) = try? WebSocketFrame.parse(bytes[...], limit: 1 << 16) {
        precondition(length <= bytes.count && frame.payload.count <= length, "a frame longer than what came")
    }
    var (sealer, _) = sendspinCiphers
    var transport = SendspinTransport(sending: sendspinCiphers.server, receiving: sendspinCiphers.client)
    var at = 0, sent = 0
    while at < bytes.count {
        let length = Int(bytes[at]) * 4
        let piece = Array(bytes[(at + 1)..<min(bytes.count, at + 1 + length)])
        at += 1 + length
        sent += piece.count
        do {
            if case let .binary(binary)? = try transport.open(sealer.encrypt(piece)) {
                precondition(binary.count <= sent, "a message longer than what was sent")
            }
        } catch {
            return
        }
    }
}

/// The stream's decoders, as a room has them (Opus, L24, FLAC by libFLAC), made once.
nonisolated(unsafe) let decoders = try! streamDecoders()

/// A packet's payload (after SRTP opened it) through every codec's decoder, then a loss
/// concealed: each either decodes it or throws; a FLAC frame's block is bounded.
func payload(_ bytes: [UInt8]) {
    for (_, decoder) in decoders.sorted(by: { $0.key < $1.key }) {
        var out: [Float] = []
        if let frames = try? decoder.decode(bytes[...], into: &out) {
            precondition(frames >= 0 && frames <= 5_760 && out.count == frames * 2, "a payload decoded to \(frames) frames, \(out.count) samples")
        }
        _ = try? decoder.conceal(frames: 192, into: &out)
        _ = try? decoder.decodeFEC(from: bytes[...], frames: 960, into: &out)
    }
}
