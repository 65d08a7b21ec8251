import Foundation
import Testing
import TuttiNet
import TuttiNode

extension IntegrationTests {
/// The .deb packages (deploy/make-deb.sh), built from the release binaries and installed
/// with apt into a clean Debian root (debootstrap's minimal system, made once by
/// deploy/test-setup.sh), then removed and purged; their systemd units checked by
/// `systemd-analyze verify` against that root.
@Suite("Packages", .serialized, .timeLimit(.minutes(3)))
struct PackageTests {
    static let rootTarball = ProcessInfo.processInfo.environment["TUTTI_TEST_ROOT"] ?? "/var/cache/tutti-test/bookworm-root-v5.tar.gz"

    @Test func theDebsInstallIntoACleanRootRunAndRemove() throws {
        let release = Harness.packageRoot + "/.build/release/"
        for (path, why) in [(release + "tutti", "no release build (deploy/setup.sh makes it; CI builds none)"), (release + "tutti-follower", "no release build"),
                            (Self.rootTarball, "no clean root (deploy/test-setup.sh makes it)"), ("/usr/bin/dpkg-deb", "no dpkg-deb")]
            where !FileManager.default.fileExists(atPath: path) {
            print("PackageTests skipped: \(why)")
            return
        }
        let h = try Harness("deb")
        let built = try h.run("make-deb", ["env", "TUTTI_DEB_PREBUILT=1", "TUTTI_DEB_COMPRESSION=zstd", Harness.packageRoot + "/deploy/make-deb.sh", h.path("debs")], timeout: 120)
        #expect(built.code == 0, "\(built.err)")
        let debs = built.out.split(separator: "\n").map(String.init)
        let tutti = try #require(debs.first { $0.contains("/tutti_") }), follower = try #require(debs.first { $0.contains("/tutti-follower_") })

        // What they hold and need.
        let info = try h.run("info", ["dpkg-deb", "--field", follower, "Depends"])
        // PulseAudio's client library is not among them: the follower speaks its protocol itself.
        #expect(!info.out.contains("libpulse0") && info.out.contains("libasound2") && info.out.contains("libopus0") && !info.out.contains("swift"), "\(info.out)")
        // No sound server comes with a room's player (a Pi may have none: it plays to ALSA).
        let recommends = try h.run("recommends", ["dpkg-deb", "--field", follower, "Recommends"]).out
        #expect(!recommends.contains("pulseaudio") && !recommends.contains("pipewire"), "\(recommends)")
        let contents = try h.run("contents", ["dpkg-deb", "--contents", tutti]).out
        for file in ["./usr/bin/tutti", "./usr/lib/systemd/system/tutti-coordinator.service", "./usr/lib/systemd/user/tutti-mpris.service",
                     "./etc/tutti/coordinator.toml", "./usr/share/doc/tutti/examples/follower.toml", "./usr/share/man/man1/tutti-coordinator.1.gz"] {
            #expect(contents.contains(file), "\(file) is not in the package")
        }

        // A clean root, with nothing of tutti or Swift in it.
        let root = h.path("root")
        defer { _ = ChildProcess.output(["rm", "-rf", root], timeout: 60) }
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        #expect(try h.run("unpack", ["tar", "-C", root, "-xzf", Self.rootTarball], timeout: 60).code == 0)
        #expect(!FileManager.default.fileExists(atPath: root + "/usr/bin/swift"))
        for deb in [tutti, follower] { try FileManager.default.copyItem(atPath: deb, toPath: root + "/tmp/" + (deb as NSString).lastPathComponent) }
        // In the root, with its own /proc (a mount namespace of its own, so nothing leaks).
        func chroot(_ name: String, _ args: [String]) throws -> (code: Int32, out: String, err: String) {
            let command = args.map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
            return try h.run(name, ["unshare", "--mount", "--fork", "sh", "-c", "mount -t proc proc \(root)/proc && exec chroot \(root) \(command)"],
                             timeout: 60)
        }
        // As on a Pi (`apt install ./tutti-follower_*.deb`), without the recommended sound
        // server and avahi-daemon (the root has no network to fetch them).
        let install = try chroot("install", ["sh", "-c", "apt-get install -y --no-install-recommends /tmp/tutti_*.deb /tmp/tutti-follower_*.deb"])
        #expect(install.code == 0, "apt install: \(install.out) \(install.err)")

        // The binaries run without a Swift toolchain; the coordinator's user and files are there.
        #expect(try chroot("help", ["tutti", "--help"]).out.contains("Synchronized multi-room music"))
        #expect(try chroot("help-follower", ["tutti-follower", "--help"]).out.contains("--metrics-listen"))
        let check = try chroot("check", ["tutti", "config", "check", "/etc/tutti/coordinator.toml"])
        #expect(check.code == 0, "\(check.out)")
        #expect(try chroot("user", ["getent", "passwd", "tutti"]).out.contains("/var/lib/tutti"))
        #expect(try chroot("state", ["stat", "-c", "%U %a", "/var/lib/tutti"]).out.trimmingCharacters(in: .whitespacesAndNewlines) == "tutti 750")

        // The units, checked against the root they are installed in.
        for unit in ["/usr/lib/systemd/system/tutti-coordinator.service", "/usr/lib/systemd/user/tutti-follower.service",
                     "/usr/lib/systemd/system/tutti-follower-alsa.service", "/usr/lib/systemd/user/tutti-mpris.service"] {
            // A user unit is checked as the user's manager would load it (it wants a runtime folder).
            let verify = try chroot("verify", ["sh", "-c", "mkdir -p -m 0700 /tmp/runtime && XDG_RUNTIME_DIR=/tmp/runtime systemd-analyze "
                                                + (unit.contains("/user/") ? "--user" : "--system") + " verify --man=no " + unit])
            #expect(verify.code == 0 && !verify.err.contains(unit.split(separator: "/").last!), "\(unit): \(verify.err)")
        }

        // Removed: the programs go, the settings stay; purged: the settings, the state and the user go.
        let remove = try chroot("remove", ["apt-get", "remove", "-y", "tutti", "tutti-follower"])
        #expect(remove.code == 0, "\(remove.err)")
        #expect(!FileManager.default.fileExists(atPath: root + "/usr/bin/tutti") && !FileManager.default.fileExists(atPath: root + "/usr/bin/tutti-follower"))
        #expect(FileManager.default.fileExists(atPath: root + "/etc/tutti/coordinator.toml"))
        let purge = try chroot("purge", ["apt-get", "purge", "-y", "tutti"])
        #expect(purge.code == 0, "\(purge.err)")
        #expect(!FileManager.default.fileExists(atPath: root + "/etc/tutti/coordinator.toml"))
        #expect(!FileManager.default.fileExists(atPath: root + "/var/lib/tutti"))
        #expect(try chroot("user-gone", ["getent", "passwd", "tutti"]).code != 0)
    }
}
}
