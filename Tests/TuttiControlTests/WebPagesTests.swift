import Foundation
import Testing
@testable import TuttiControl

/// The pages as the files they are (Sources/TuttiControl/Web): what is embedded is what the
/// repository holds, their scripts parse, and every element a script names is in its page.
@Suite("Web pages")
struct WebPagesTests {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Sources/TuttiControl/Web").path

    static func file(_ name: String) throws -> String {
        try String(contentsOfFile: folder + "/" + name, encoding: .utf8)
    }

    @Test func theBinaryServesTheRepositorysFiles() throws {
        for (path, name) in [("/", "remote.html"), ("/remote.js", "remote.js"), ("/remote.css", "remote.css"), ("/lyrics", "lyrics.html"),
                             ("/lyrics.js", "lyrics.js"), ("/lyrics.css", "lyrics.css"), ("/manifest.webmanifest", "manifest.webmanifest"),
                             ("/icon.svg", "icon.svg")] {
            #expect(WebPages.all[path]?.body == Array(try Self.file(name).utf8), "\(path)")
        }
        let manifest = try JSONSerialization.jsonObject(with: Data(try Self.file("manifest.webmanifest").utf8)) as? [String: Any]
        #expect(manifest?["start_url"] as? String == "/")
    }

    @Test func everyElementAScriptNamesIsInItsPage() throws {
        for (page, script) in [("remote.html", "remote.js"), ("lyrics.html", "lyrics.js")] {
            let html = try Self.file(page), js = try Self.file(script)
            let ids = html.matches(of: /\sid="([A-Za-z0-9_-]+)"/).map { String($0.output.1) }
            #expect(Set(ids).count == ids.count, "\(page) repeats an id: \(ids)")
            let named = js.matches(of: /(?:\$|getElementById)\(["']([A-Za-z0-9_-]+)["']\)/).map { String($0.output.1) }
            #expect(!named.isEmpty)
            for id in Set(named) { #expect(ids.contains(id), "\(script) names #\(id), which \(page) does not have") }
        }
    }

    static var node: String? { ["/usr/bin/node", "/usr/local/bin/node"].first { FileManager.default.isExecutableFile(atPath: $0) } }

    @Test(.enabled(if: node != nil)) func theScriptsParse() throws {
        for script in ["remote.js", "lyrics.js"] {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: Self.node!)
            process.arguments = ["--check", Self.folder + "/" + script]
            let errors = Pipe()
            process.standardError = errors
            try process.run()
            process.waitUntilExit()
            let said = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            #expect(process.terminationStatus == 0, "\(script): \(said)")
        }
    }
}
