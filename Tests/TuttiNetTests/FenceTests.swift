import Foundation
import Testing

/// The fence, checked on the sources themselves: the system's C library is imported only by
/// TuttiNet; real clocks are built only where a program is put together (the commands,
/// `main`, the demo; and TuttiNet, their home); time is read only through TuttiNet's
/// `SystemClock`; threads hand each other work through TuttiNet's `Inbox`, not a condition
/// of Foundation's; and what a follower links imports FoundationEssentials, never the whole
/// Foundation. A change that breaks one of these fails here, naming file and line.
@Suite("The fence around system calls and clocks")
struct FenceTests {
    /// The package's `Sources`, from this file's place in `Tests/TuttiNetTests`.
    static let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Sources").path

    /// Every Swift file under `Sources`, as (path from `Sources`, its lines).
    static func files() throws -> [(path: String, lines: [Substring])] {
        let manager = FileManager.default
        guard let walker = manager.enumerator(atPath: sources) else { return [] }
        var found: [(String, [Substring])] = []
        for case let path as String in walker where path.hasSuffix(".swift") {
            let text = try String(contentsOfFile: sources + "/" + path, encoding: .utf8)
            found.append((path, text.split(separator: "\n", omittingEmptySubsequences: false)))
        }
        return found.sorted { $0.0 < $1.0 }
    }

    /// Where `pattern` appears in code (not in a comment) outside the folders `allowed`.
    static func breaches(of pattern: String, allowedIn allowed: [String] = []) throws -> [String] {
        var found: [String] = []
        for (path, lines) in try files() where !allowed.contains(where: { path.hasPrefix($0) }) {
            for (n, line) in lines.enumerated() {
                let code = line.split(separator: "//", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
                if code.contains(pattern) { found.append("Sources/\(path):\(n + 1): \(line.trimmingCharacters(in: .whitespaces))") }
            }
        }
        return found
    }

    @Test func theSourcesAreWhereTheTestLooks() throws {
        let paths = try Self.files().map(\.path)
        #expect(paths.contains("TuttiNet/System.swift") && paths.count > 100, "\(Self.sources): \(paths.count) files")
    }

    @Test func onlyTuttiNetImportsTheCLibrary() throws {
        let found = try Self.breaches(of: "import Glibc", allowedIn: ["TuttiNet/"])
        #expect(found.isEmpty, "Glibc outside TuttiNet:\n\(found.joined(separator: "\n"))")
    }

    @Test func realClocksAreBuiltOnlyWhereAProgramIsPutTogether() throws {
        let found = try Self.breaches(of: "SystemClock()", allowedIn: [
            "tutti/", "tutti-follower/", "TuttiFollower/FollowerCommand.swift", "TuttiNode/Demo/", "TuttiNet/",
        ])
        #expect(found.isEmpty, "a SystemClock built inside a shell (take the clock it is given):\n\(found.joined(separator: "\n"))")
    }

    @Test func timeIsReadOnlyThroughTuttiNet() throws {
        var found: [String] = []
        for pattern in ["Date()", "DispatchTime.now()", "ContinuousClock.now", "SuspendingClock.now", "CFAbsoluteTimeGetCurrent"] {
            found += try Self.breaches(of: pattern)
        }
        #expect(found.isEmpty, "time read around SystemClock:\n\(found.joined(separator: "\n"))")
    }

    @Test func threadsHandEachOtherWorkThroughAnInbox() throws {
        let found = try Self.breaches(of: "NSCondition")
        #expect(found.isEmpty, "an NSCondition (use TuttiNet's Inbox):\n\(found.joined(separator: "\n"))")
    }

    /// The modules `tutti-follower` links, read from Package.swift: its target's
    /// dependencies that are targets of the package, and theirs, by name.
    static func followerModules() throws -> Set<String> {
        let manifest = try String(contentsOfFile: sources + "/../Package.swift", encoding: .utf8)
        var dependencies: [String: [String]] = [:]
        for declaration in manifest.components(separatedBy: "Target(name: \"").dropFirst()
            + manifest.components(separatedBy: ".target(name: \"").dropFirst() {
            guard let nameEnd = declaration.firstIndex(of: "\"") else { continue }
            let name = String(declaration[..<nameEnd])
            let rest = declaration[nameEnd...]
            guard let open = rest.range(of: "dependencies: ["), let close = rest[open.upperBound...].firstIndex(of: "]") else {
                dependencies[name, default: []] += []
                continue
            }
            // Quoted names only: a product of another package is written `.product(name: ...)`.
            let list = rest[open.upperBound..<close].split(separator: ",").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
            dependencies[name, default: []] += list.filter { $0.hasPrefix("\"") }.map { String($0.dropFirst().dropLast()) }
        }
        var found: Set<String> = [], next = ["tutti-follower"]
        while let name = next.popLast() {
            guard found.insert(name).inserted else { continue }
            next += dependencies[name] ?? []
        }
        return found
    }

    /// The whole Foundation (libFoundation and CoreFoundation, and ICU's data with them) cost a
    /// follower 4.7 MB resident when one of its modules imported it (bench/NOTES.md, issue 55).
    @Test func aFollowerLinksNoWholeFoundation() throws {
        let modules = try Self.followerModules()
        #expect(modules.isSuperset(of: ["TuttiFollower", "TuttiCore", "TuttiNet", "TuttiAudio"]), "\(modules.sorted())")
        var found: [String] = []
        for (path, lines) in try Self.files() where modules.contains(String(path.prefix(while: { $0 != "/" }))) {
            for (n, line) in lines.enumerated() {
                let words = line.split(separator: " ")
                if words.count >= 2, words[words.count - 2] == "import", words.last == "Foundation" {
                    found.append("Sources/\(path):\(n + 1): \(line)")
                }
            }
        }
        #expect(found.isEmpty, "the whole Foundation imported by a module tutti-follower links (import FoundationEssentials):\n\(found.joined(separator: "\n"))")
    }
}
