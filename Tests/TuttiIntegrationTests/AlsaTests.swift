import Foundation
import Testing

extension IntegrationTests {
/// A follower with no sound server to talk to plays to ALSA's default device by itself. (Rooms
/// straight to ALSA, in sync on sound cards with crystals of their own: VCardTests.)
@Suite("ALSA output", .serialized, .timeLimit(.minutes(2)))
struct AlsaTests {
    /// No PulseAudio server answers: `--output auto` (the default) plays to ALSA's default
    /// device and says so.
    @Test func withNoSoundServerTheFollowerPlaysToAlsa() throws {
        let h = try Harness("alsa-auto")
        h.environment["PULSE_SERVER"] = "unix:" + h.path("nobody-listens-here")
        h.environment["ALSA_CONFIG_PATH"] = h.path("asound.conf")
        // ALSA's default device, on this machine with no sound card: the null device.
        try "pcm.!default { type null }\n".write(toFile: h.path("asound.conf"), atomically: true, encoding: .utf8)
        let clock = "127.0.0.1:\(Harness.freePort())"
        try h.tutti("coordinator", ["coordinator", Harness.demoSong, "--multicast", "off", "--clock-listen", clock])
        try h.tutti("a", ["follower", "--coordinator", clock, "--unicast", "--status-interval", "1"])
        #expect(Harness.wait(timeout: 15) { h.log("a").contains("output: alsa:default (no PulseAudio server answers here") },
                "\(h.log("a"))")
    }
}
}
