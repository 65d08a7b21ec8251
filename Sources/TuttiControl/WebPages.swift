/// The house's own web pages, as files in `Web/` (HTML, CSS, JavaScript, the manifest and
/// icon), embedded into the binary when it is built (SwiftPM's `embedInCode`): what a
/// browser is served is what the repository holds, and front-end tools can read it as such.
///
/// - `/`: the web remote, for a phone: the zone it steers, now playing with a progress bar
///   to drag, the transport, loop mode and loudness, the library (albums with their art,
///   artists, folders, search as you type; play or add), the queue (drag to reorder), a volume
///   per room and for the group, zones and their rooms, pairing. Kept live by the event
///   stream. Changes need the house token, which the page takes from its address
///   (`/#token=...`, as the coordinator prints it) and remembers.
/// - `/lyrics?room=NAME&delay=MS`: the lyric screen, its clock locked to the coordinator's
///   over the event stream, each frame drawn for the moment it is on the glass.
/// - `/manifest.webmanifest`, `/icon.svg` (also at `/favicon.ico`): the remote installs as a
///   web app; `/silence.wav`, what it plays for a phone's lock screen to show the house.
enum WebPages {
    /// Path, type and bytes of every page and the files they load.
    static let all: [String: ControlServer.Page] = [
        "/": page("text/html; charset=utf-8", PackageResources.remote_html),
        "/remote.css": page("text/css; charset=utf-8", PackageResources.remote_css),
        "/remote.js": page("text/javascript; charset=utf-8", PackageResources.remote_js),
        "/lyrics": page("text/html; charset=utf-8", PackageResources.lyrics_html),
        "/lyrics.css": page("text/css; charset=utf-8", PackageResources.lyrics_css),
        "/lyrics.js": page("text/javascript; charset=utf-8", PackageResources.lyrics_js),
        "/manifest.webmanifest": page("application/manifest+json", PackageResources.manifest_webmanifest),
        "/icon.svg": page("image/svg+xml", PackageResources.icon_svg),
        // Where a browser looks by itself (a page without a link to its icon, a bookmark).
        "/favicon.ico": page("image/svg+xml", PackageResources.icon_svg),
        "/silence.wav": page("audio/wav", silence),
    ]

    /// A second of silence (8 kHz, 16-bit, mono WAV) that the remote loops while its "lock
    /// screen" is on: a phone shows the controls of a page that plays.
    static let silence: [UInt8] = {
        let rate = 8_000, data = rate * 2
        func le(_ value: Int, _ bytes: Int) -> [UInt8] { (0..<bytes).map { UInt8((value >> (8 * $0)) & 0xFF) } }
        return Array("RIFF".utf8) + le(36 + data, 4) + Array("WAVEfmt ".utf8) + le(16, 4) + le(1, 2) + le(1, 2) + le(rate, 4)
            + le(rate * 2, 4) + le(2, 2) + le(16, 2) + Array("data".utf8) + le(data, 4) + [UInt8](repeating: 0, count: data)
    }()

    private static func page(_ type: String, _ bytes: [UInt8]) -> ControlServer.Page {
        ControlServer.Page(contentType: type, body: bytes)
    }
}
