// swift-tools-version: 6.0
import Foundation
import PackageDescription

// How the follower is linked, for its memory (bench/NOTES.md): lld packs the binary's
// relative relocations (some 54,000, 1.3 MB the loader reads at every start) into a few
// kilobytes (DT_RELR, glibc 2.36), and the binary exports none of its symbols (the static
// standard library's link asks for -export-dynamic; nothing looks symbols up in a follower).
//
// lld also lays out first, together, the functions a follower runs (hot-functions.txt, made by
// bench/order): they are a few hundred kilobytes of ten megabytes of code, and a page of code
// is resident once anything on it has run.
//
// And the C++ runtime under Swift's (libstdc++) is linked in, the few functions it uses, not
// loaded whole: the shared library cost a follower 0.9 MB of resident pages (its symbol tables
// and relocations, read at every start). Nothing else a follower loads uses C++. The directory
// link/ holds a linker script named libstdc++.so that names the static archive, and comes first
// in the library path.
// (Always named, never looked for: SwiftPM keeps a manifest's result by its text, so a
// manifest that looked for the file would keep what it found the first time.)
let followerSources = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .appendingPathComponent("Sources/tutti-follower")
let hotFunctions = followerSources.appendingPathComponent("hot-functions.txt").path
let staticCxx = ["-L", followerSources.appendingPathComponent("link").path]
let codeOrder = ["-Xlinker", "--symbol-ordering-file=\(hotFunctions)", "-Xlinker", "--no-warn-symbol-ordering"]
let leanLinking: [LinkerSetting] = [
    .unsafeFlags(["-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs", "-Xlinker", "--no-export-dynamic"] + staticCxx + codeOrder,
                 .when(platforms: [.linux])),
]

let package = Package(
    name: "tutti",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "tutti", targets: ["tutti"]),
        // The follower alone, for the machines next to the speakers: no web framework, no
        // full Foundation (FoundationEssentials only), so it stays small in memory.
        .executable(name: "tutti-follower", targets: ["tutti-follower"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", from: "2.8.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-crypto", "3.12.0"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.0"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.3.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.0"),
        // Hummingbird's own dependency: its HTTP request parts, for the request head limit.
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/LebJe/TOMLKit", from: "0.6.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
    ],
    targets: [
        // System libraries: each is imported by exactly one wrapper target.
        .systemLibrary(name: "COpus", pkgConfig: "opus", providers: [.apt(["libopus-dev"])]),
        // libasound's declarations only: CALSALoader defines the functions TuttiAudio calls and
        // loads the library on the first of them, so a room on PulseAudio never maps it.
        .systemLibrary(name: "CALSA", providers: [.apt(["libasound2-dev"])]),
        // What the three loaders share: a library opened on its first call, a function found on
        // its own first call (dlopen, dlsym; include/lazy-library.h).
        .target(name: "CLazyLibrary"),
        .target(name: "CALSALoader", dependencies: ["CLazyLibrary"]),
        // Nettle's AES-GCM, HMAC-SHA256 and AES, for SRTP's per-packet seals and opens and the
        // house key's uses (TuttiSecurity's `GCMKey`, `HMACKey`): a small library, and on every
        // Debian system already (GnuTLS, which apt uses, is built on it).
        .systemLibrary(name: "CNettle", pkgConfig: "nettle", providers: [.apt(["nettle-dev"])]),
        // libFLAC's declarations only: CFLACLoader defines the functions TuttiCodecs calls and
        // loads the library on the first of them, so a room that plays Opus never maps it.
        .systemLibrary(name: "CFLAC", providers: [.apt(["libflac-dev"])]),
        .target(name: "CFLACLoader", dependencies: ["CLazyLibrary"]),
        // libavahi-client, to announce and find coordinators (mDNS/DNS-SD): its declarations
        // only. CAvahiLoader defines the functions TuttiDiscovery calls and loads the library on
        // the first of them, so a follower told its coordinator never maps it (nor libdbus and
        // libsystemd, which it loads).
        .systemLibrary(name: "CAvahi", providers: [.apt(["libavahi-client-dev"])]),
        .target(name: "CAvahiLoader", dependencies: ["CLazyLibrary"]),
        // FFmpeg's libavformat, libavcodec, libavutil and libswresample: every common audio
        // format, and the sample-rate converter (the coordinator only).
        .systemLibrary(name: "CFFmpeg", pkgConfig: "libavformat",
                       providers: [.apt(["libavformat-dev", "libavcodec-dev", "libavutil-dev", "libswresample-dev", "libswscale-dev"])]),
        // libdbus, for `tutti mpris` on the session bus.
        .systemLibrary(name: "CDBus", pkgConfig: "dbus-1", providers: [.apt(["libdbus-1-dev"])]),
        // Non-variadic wrappers around opus_*_ctl, which Swift cannot call.
        .target(name: "COpusShim", dependencies: ["COpus"]),

        // Pure logic: no I/O, no C imports, no reading of the clock.
        .target(name: "TuttiCore"),
        // The only importer of libopus and libFLAC: the house's stream, encoded and decoded
        // (Opus; PCM as L24; FLAC frames, decoded here, encoded by FFmpeg's encoder).
        .target(name: "TuttiCodecs", dependencies: ["TuttiCore", "COpus", "COpusShim", "CFLAC", "CFLACLoader"]),
        // The only importer of FFmpeg: decoding files and streams of every common format,
        // sample-exact, with their tags and art; the house's sample-rate converter.
        .target(name: "TuttiMedia", dependencies: ["TuttiCore", "TuttiNet", "CFFmpeg"]),
        // Sound outputs: PulseAudio (its native protocol, spoken here: no libpulse), ALSA
        // (libasound, loaded on first use), WAV and null.
        .target(name: "TuttiAudio", dependencies: ["TuttiCore", "TuttiNet", "CALSA", "CALSALoader"]),
        // The house key: made, derived per purpose (HKDF); the clock port's tags (HMAC-SHA256);
        // the stream's SRTP (AES-GCM). What a follower needs, through Nettle alone (its only
        // importer).
        .target(name: "TuttiSecurity", dependencies: ["TuttiCore", "CNettle"]),
        // Sendspin (Music Assistant's protocol): its sealed sessions' opening and transport,
        // for the coordinator's Sendspin server and a follower playing from one.
        .target(name: "TuttiSendspin", dependencies: ["TuttiCore", "TuttiSecurity"]),
        // Trust between machines: pairing (X25519) and the control API's certificate (X.509).
        // The only importer of swift-crypto and swift-certificates; no follower links it.
        .target(name: "TuttiTrust", dependencies: [
            "TuttiCore", "TuttiSecurity", .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "X509", package: "swift-certificates"), .product(name: "SwiftASN1", package: "swift-asn1"),
        ]),
        // The system-call fence: UDP sockets (audio, clock), the clock, files, threads,
        // signals and the log. FoundationEssentials at most.
        .target(name: "TuttiNet", dependencies: ["TuttiCore"]),
        // The control API's blocking HTTP and WebSocket clients (TLS through NIOSSL).
        .target(name: "TuttiWeb", dependencies: [
            "TuttiCore", "TuttiNet", .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOTLS", package: "swift-nio"), .product(name: "NIOSSL", package: "swift-nio-ssl"),
        ]),
        // Remote sources: MP3 files and internet radio over HTTP(S) (redirects, timeouts,
        // ranges, ICY metadata) and remote playlists, through async-http-client, its only
        // importer. Only the coordinator links it.
        .target(name: "TuttiRemote", dependencies: [
            "TuttiCore", "TuttiNet", .product(name: "AsyncHTTPClient", package: "async-http-client"),
        ]),
        // The control API: HTTP + JSON and the WebSocket event stream (Hummingbird).
        // The control API's contract: its models (the JSON clients see), the service the
        // house implements and its errors. No web framework: `tutti ctl` and the server share it.
        .target(name: "TuttiAPI", dependencies: ["TuttiCore"]),
        .target(name: "TuttiControl", dependencies: [
            "TuttiCore",
            .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
            "TuttiAPI",
            "TuttiNet",
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
            .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
            .product(name: "HummingbirdTLS", package: "hummingbird"),
            .product(name: "NIOSSL", package: "swift-nio-ssl"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ], resources: ["remote.html", "remote.css", "remote.js", "lyrics.html", "lyrics.css", "lyrics.js", "manifest.webmanifest", "icon.svg"]
            .map { .embedInCode("Web/\($0)") }),
        // Configuration files (TOML, read by TuttiCore's TOMLReader: TOMLKit would bring the
        // whole of Foundation into the lean follower) and TUTTI_* variables completing a role's
        // command line; `tutti config check`. The follower links it too.
        .target(name: "TuttiConfig", dependencies: [
            "TuttiNet", "TuttiCore", .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),
        // Finding the coordinator on the network: DNS-SD over mDNS through avahi-daemon;
        // libavahi-client's only importer.
        .target(name: "TuttiDiscovery", dependencies: ["TuttiCore", "TuttiNet", "CAvahi", "CAvahiLoader"]),
        // `tutti mpris`: the house on the desktop's session bus as an MPRIS media player
        // (media keys, now-playing widgets); libdbus's only importer.
        .target(name: "TuttiMPRIS", dependencies: ["TuttiCore", "TuttiAPI", "TuttiNet", "CDBus"]),
        // Metrics in Prometheus's text format (swift-metrics' backend): swift-prometheus's only
        // importer. Both roles link it.
        .target(name: "TuttiMetrics", dependencies: [
            .product(name: "Prometheus", package: "swift-prometheus"), .product(name: "CoreMetrics", package: "swift-metrics"),
        ]),
        // The music library: the music folders indexed into SQLite (GRDB, its only importer)
        // in the state folder, searched with FTS5, kept up to date with inotify. Only the
        // coordinator links it.
        .target(name: "TuttiLibrary", dependencies: [
            "TuttiCore", "TuttiAPI", "TuttiNet", .product(name: "GRDB", package: "GRDB.swift"),
        ]),
        // The follower: its threads, the clock client, the playout loop, its command line.
        // FoundationEssentials at most (the lean `tutti-follower` links nothing more).
        .target(name: "TuttiFollower", dependencies: [
            "TuttiCore", "TuttiCodecs", "TuttiAudio", "TuttiNet", "TuttiSecurity", "TuttiSendspin", "TuttiConfig", "TuttiMetrics", "TuttiDiscovery",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),
        // Composition: coordinator, house, lyric screens, demo.
        .target(name: "TuttiNode", dependencies: [
            "TuttiCore", "TuttiCodecs", "TuttiAudio", "TuttiNet", "TuttiWeb", "TuttiAPI", "TuttiControl", "TuttiSecurity", "TuttiTrust", "TuttiFollower",
            "TuttiRemote", "TuttiMedia", "TuttiMetrics", "TuttiDiscovery", "TuttiLibrary", "TuttiSendspin",
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"), .product(name: "Logging", package: "swift-log"),
        ]),
        // Fakes for tests: manual clock, in-memory lossy network, recording sink.
        .target(name: "TuttiTesting", dependencies: ["TuttiCore"]),
        .executableTarget(name: "tutti-follower", dependencies: ["TuttiFollower", "TuttiConfig"], exclude: ["hot-functions.txt", "link"],
                          linkerSettings: leanLinking),
        .executableTarget(name: "tutti", dependencies: [
            "TuttiNode", "TuttiCore", "TuttiCodecs", "TuttiAudio", "TuttiNet", "TuttiWeb", "TuttiAPI", "TuttiControl", "TuttiSecurity", "TuttiTrust",
            "TuttiFollower", "TuttiConfig", "TuttiMPRIS", "TuttiDiscovery",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),

        .testTarget(name: "TuttiCoreTests", dependencies: ["TuttiCore", "TuttiTesting"]),
        // The follower's loop in a simulated house (the real shells over an in-memory network).
        .testTarget(name: "TuttiFollowerTests", dependencies: ["TuttiFollower", "TuttiNode", "TuttiCore", "TuttiTesting", "TuttiNet", "TuttiSecurity"]),
        .testTarget(name: "TuttiLibraryTests", dependencies: ["TuttiLibrary", "TuttiAPI", "TuttiCore", "TuttiNet"]),
        .testTarget(name: "TuttiCodecsTests", dependencies: ["TuttiCodecs", "TuttiCore", "TuttiNet"]),
        .testTarget(name: "TuttiMediaTests", dependencies: ["TuttiMedia", "TuttiCore", "TuttiTesting"]),
        .testTarget(name: "TuttiAudioTests", dependencies: ["TuttiAudio", "TuttiCore"]),
        .testTarget(name: "TuttiNetTests", dependencies: ["TuttiNet", "TuttiCore"]),
        .testTarget(name: "TuttiMPRISTests", dependencies: ["TuttiMPRIS", "TuttiAPI", "TuttiCore"]),
        .testTarget(name: "TuttiDiscoveryTests", dependencies: ["TuttiDiscovery", "TuttiSecurity"]),
        // TOMLKit (toml++) here only: the reader is held to it on the same documents.
        .testTarget(name: "TuttiConfigTests", dependencies: [
            "TuttiConfig", "TuttiFollower", "TuttiCore", .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "TOMLKit", package: "TOMLKit"),
        ]),
        .testTarget(name: "TuttiNodeTests", dependencies: [
            "TuttiNode", "TuttiFollower", "TuttiCore", "TuttiTesting", "TuttiCodecs", "TuttiMedia", "TuttiNet", "TuttiSecurity", "TuttiRemote", "TuttiSendspin",
        ]),
        // swift-crypto here too: HKDF and HMAC through Nettle are checked against it.
        .testTarget(name: "TuttiSendspinTests", dependencies: ["TuttiSendspin", "TuttiSecurity"], exclude: ["pairing_vectors.py"]),
        .testTarget(name: "TuttiSecurityTests", dependencies: [
            "TuttiSecurity", "TuttiTrust", "TuttiCore", .product(name: "Crypto", package: "swift-crypto"),
        ], exclude: ["noise_vectors.py", "cpace_vectors.py"]),
        .testTarget(name: "TuttiControlTests", dependencies: [
            "TuttiAPI", "TuttiControl", "TuttiCore", "TuttiNet",
            .product(name: "Hummingbird", package: "hummingbird"), .product(name: "HummingbirdTesting", package: "hummingbird"),
        ]),
        .testTarget(name: "TuttiIntegrationTests", dependencies: [
            "TuttiCore", "TuttiNode", "TuttiFollower", "TuttiCodecs", "TuttiNet", "TuttiWeb", "TuttiSecurity", "TuttiAPI", "TuttiTesting",
            "TuttiRemote", "TuttiAudio", "TuttiSendspin",
        ]),
    ],
    swiftLanguageModes: [.v6]
)

// Every function of the follower's modules in a section of its own, in release builds (Swift
// puts a file's non-generic functions in one `.text` section otherwise): then the code order
// above places each of them, not whole files, and a follower's running code lies together
// instead of spread over the files it comes from (bench/NOTES.md, "A follower on a card").
// The follower's modules only: the whole `tutti`'s link is not made longer for it.
@MainActor func localModules(of name: String) -> Set<String> {
    guard let target = package.targets.first(where: { $0.name == name }) else { return [] }
    var found: Set<String> = [name]
    for dependency in target.dependencies {
        switch dependency {
        case let .targetItem(name, _), let .byNameItem(name, _): found.formUnion(localModules(of: name))
        default: break
        }
    }
    return found
}
let cTargets: Set = ["CALSALoader", "CAvahiLoader", "CFLACLoader", "CLazyLibrary", "COpusShim"]
for target in package.targets where localModules(of: "tutti-follower").contains(target.name) && target.type != .system
    && !cTargets.contains(target.name) {
    target.swiftSettings = (target.swiftSettings ?? []) + [.unsafeFlags(["-Xfrontend", "-function-sections"], .when(configuration: .release))]
}

// The fuzz campaign's libFuzzer target (bench/fuzz/run builds it with TUTTI_FUZZ=1 and
// -sanitize=fuzzer); not part of the product.
if ProcessInfo.processInfo.environment["TUTTI_FUZZ"] == "1" {
    package.targets.append(.executableTarget(
        name: "tutti-fuzz", dependencies: ["TuttiCore", "TuttiCodecs", "TuttiMedia", "TuttiAPI", "TuttiControl", "TuttiSecurity", "TuttiSendspin", "TuttiNet"], path: "bench/fuzz/Sources/tutti-fuzz",
        swiftSettings: [.unsafeFlags(["-parse-as-library"])]))
}
