import Foundation
import Testing
import TuttiAPI
import TuttiCore
import TuttiNet
import TuttiNode

extension IntegrationTests {
/// Discovery on a real network of two hosts: network namespaces joined by a veth pair,
/// each with its own system bus (dbus-daemon) and avahi-daemon, started here. The
/// coordinator announces itself on one; the follower, `tutti ctl` and `tutti lyrics` on
/// the other find it by mDNS with no address given.
@Suite("Discovery with avahi-daemon", .serialized, .timeLimit(.minutes(2)))
struct DiscoveryTests {
    /// Two hosts, `house` (10.79.0.1) and `room` (10.79.0.2), each with its daemons.
    final class Network {
        let id = "\(getpid() % 10_000)-\(UInt16.random(in: 0...UInt16.max))"
        let h: Harness
        var namespaces: [String] = []
        var buses: [String: String] = [:]

        init?(_ h: Harness) throws {
            self.h = h
            for tool in ["avahi-daemon", "dbus-daemon", "ip"] where ChildProcess.output(["sh", "-c", "command -v \(tool)"]) == nil {
                print("DiscoveryTests skipped: \(tool) is not installed (deploy/setup.sh installs it)")
                return nil
            }
            let house = "tutti-h-\(id)", room = "tutti-r-\(id)"
            for ns in [house, room] {
                guard ChildProcess.output(["ip", "netns", "add", ns]) != nil else {
                    print("DiscoveryTests skipped: cannot create a network namespace (needs root)")
                    return nil
                }
                namespaces.append(ns)
            }
            let veth = ("th\(id.prefix(4))\(namespaces.count)", "tr\(id.prefix(4))\(namespaces.count)")
            _ = ChildProcess.output(["ip", "link", "add", veth.0, "type", "veth", "peer", "name", veth.1])
            for (ns, link, address) in [(house, veth.0, "10.79.0.1/24"), (room, veth.1, "10.79.0.2/24")] {
                _ = ChildProcess.output(["ip", "link", "set", link, "netns", ns])
                _ = ChildProcess.output(["ip", "netns", "exec", ns, "ip", "addr", "add", address, "dev", link])
                _ = ChildProcess.output(["ip", "netns", "exec", ns, "ip", "link", "set", link, "up"])
                _ = ChildProcess.output(["ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up"])
                let bus = h.path("bus-\(ns)")
                try """
                    <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN" "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
                    <busconfig><type>system</type><listen>unix:path=\(bus)</listen><auth>EXTERNAL</auth>
                    <policy context="default"><allow user="*"/><allow own="*"/><allow send_destination="*"/><allow receive_sender="*"/></policy></busconfig>
                    """.write(toFile: h.path("\(ns).bus.conf"), atomically: true, encoding: .utf8)
                try """
                    [server]
                    host-name=\(ns)
                    use-ipv4=yes
                    use-ipv6=no
                    allow-interfaces=\(link)
                    ratelimit-interval-usec=1000000
                    ratelimit-burst=1000
                    [publish]
                    publish-hinfo=no
                    publish-workstation=no
                    """.write(toFile: h.path("\(ns).avahi.conf"), atomically: true, encoding: .utf8)
                try h.start("dbus-\(ns)", ["ip", "netns", "exec", ns, "dbus-daemon", "--config-file=" + h.path("\(ns).bus.conf"), "--nofork", "--nopidfile"])
                buses[ns] = "unix:path=\(bus)"
                _ = Harness.wait(timeout: 3) { FileManager.default.fileExists(atPath: bus) }
                // avahi-daemon keeps its pid file and socket in /run/avahi-daemon: a private
                // one in the mount namespace `ip netns exec` makes, so a host's own daemon
                // (or the other host's) is never in the way.
                try FileManager.default.createDirectory(atPath: "/run/avahi-daemon", withIntermediateDirectories: true)
                try h.start("avahi-\(ns)", ["ip", "netns", "exec", ns, "sh", "-c",
                                            "mount -t tmpfs tmpfs /run/avahi-daemon && exec avahi-daemon --no-drop-root --no-chroot --no-rlimits -f "
                                                + h.path("\(ns).avahi.conf")], with: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=\(bus)"])
            }
            guard Harness.wait(timeout: 10, { self.namespaces.allSatisfy { h.log("avahi-\($0)").contains("Server startup complete") } }) else {
                print("DiscoveryTests skipped: avahi-daemon did not start: \(namespaces.map { h.log("avahi-\($0)") })")
                return nil
            }
        }

        deinit {
            for ns in namespaces {
                h.stop("avahi-\(ns)")
                h.stop("dbus-\(ns)")
                _ = ChildProcess.output(["ip", "netns", "del", ns])
            }
        }

        var house: String { namespaces[0] }
        var room: String { namespaces[1] }

        /// Runs `args` on host `ns` with its system bus.
        @discardableResult
        func start(_ name: String, on ns: String, _ args: [String], environment: [String: String] = [:]) throws -> ChildProcess {
            try h.start(name, ["ip", "netns", "exec", ns] + args, with: environment.merging(["DBUS_SYSTEM_BUS_ADDRESS": buses[ns]!]) { a, _ in a })
        }

        func run(_ name: String, on ns: String, _ args: [String], environment: [String: String] = [:]) throws -> (code: Int32?, out: String, err: String) {
            let child = try start(name, on: ns, args, environment: environment)
            let code = child.wait(timeout: 15)
            return (code, (try? String(contentsOfFile: h.path(name + ".out"), encoding: .utf8)) ?? "", h.log(name))
        }
    }

    @Test func aFollowerCtlAndALyricScreenFindTheCoordinatorByMDNS() throws {
        let h = try Harness("discovery")
        guard let net = try Network(h) else { return }
        defer { withExtendedLifetime(net) {} }

        // The follower, no address, the house's key: started before the coordinator (a room's
        // machine that boots first), it waits for one to be announced.
        try net.start("a", on: net.room, [Harness.followerBinary, "--output", "wav:" + h.path("a.wav"), "--name", "Kitchen"])
        #expect(Harness.wait(timeout: 10) { h.log("a").contains("no coordinator is announced on the network yet (mDNS, _tutti._udp); looking again every 5 s") },
                "\(h.log("a"))")

        try net.start("coordinator", on: net.house, [Harness.binary, "coordinator", Harness.demoSong, "--loop", "--house-name", "Lake House",
                                                    "--control-listen", "0.0.0.0:8485"])
        #expect(Harness.wait(timeout: 10) {
            h.log("coordinator").contains("announced on the network as 'Lake House' (_tutti._udp, _sendspin-server._tcp, mDNS)")
        }, "\(h.log("coordinator"))")
        // Its Sendspin server, as Sendspin players look for one (client-initiated connections).
        let browsed = try net.run("browse", on: net.room, ["avahi-browse", "-rpt", "_sendspin-server._tcp"])
        #expect(browsed.out.split(separator: "\n").contains { $0.hasPrefix("=") && $0.contains(";Lake\\032House;_sendspin-server._tcp;") && $0.contains(";10.79.0.1;8927;")
            && $0.contains("\"path=/sendspin\"") }, "\(browsed.out) \(browsed.err)")
        #expect(Harness.wait(timeout: 25) { h.log("a").contains("state: playing") }, "\(h.log("a"))")
        #expect(h.log("a").contains("found the coordinator on the network: 'Lake House' at 10.79.0.1:5005"), "\(h.log("a"))")
        #expect(h.log("a").components(separatedBy: "looking again").count == 2, "said once: \(h.log("a"))")

        // `tutti ctl` on the room's host, away from the coordinator's state folder.
        let elsewhere = ["TUTTI_STATE_DIR": h.path("elsewhere")]
        let status = try net.run("ctl", on: net.room, [Harness.binary, "ctl", "status", "--json"], environment: elsewhere)
        #expect(status.code == 0, "\(status.err)")
        let parsed = try? JSONDecoder().decode(Status.self, from: Data(status.out.utf8))
        #expect(parsed?.house == "Lake House" && parsed?.rooms.map(\.name) == ["Kitchen"], "\(status.out)")

        // A new machine joins with nothing but the code the coordinator's machine shows.
        let shown = try net.run("ctl-pair", on: net.house, [Harness.binary, "ctl", "pair", "--json"])
        let code = try #require((try? JSONDecoder().decode(PairingCode.self, from: Data(shown.out.utf8)))?.code, "\(shown)")
        let paired = try net.run("pair", on: net.room, [Harness.binary, "pair", code], environment: ["TUTTI_STATE_DIR": h.path("new-pi")])
        #expect(paired.code == 0 && paired.out.contains("paired: this machine is a member of the house at http://10.79.0.1:8485"),
                "\(paired.out) \(paired.err)")
        #expect(try StateStore.readHouseKey(path: h.path("new-pi/house.key")).fingerprint
                == StateStore.readHouseKey(path: h.path("state/house.key")).fingerprint)

        // A lyric screen, printing lines.
        try net.start("lyrics", on: net.room, [Harness.binary, "lyrics", "--lines"])
        #expect(Harness.wait(timeout: 15) { h.log("lyrics").contains("found the coordinator on the network: 'Lake House'") }, "\(h.log("lyrics"))")

        // A second house on the network, of another key and the same name: it is renamed;
        // `ctl` (no key) lists both and asks; the follower keeps to its own house.
        try net.start("coordinator2", on: net.house, [Harness.binary, "coordinator", Harness.demoSong, "--house-name", "Lake House",
                                                     "--clock-listen", "0.0.0.0:5105", "--control-listen", "0.0.0.0:8585"],
                      environment: ["TUTTI_STATE_DIR": h.path("second")])
        #expect(Harness.wait(timeout: 10) { h.log("coordinator2").contains("announced on the network as 'Lake House #2'") }, "\(h.log("coordinator2"))")
        // Its Sendspin port is the first's: it says so and goes on without (and does not
        // announce one).
        #expect(h.log("coordinator2").contains("cannot serve Sendspin on 0.0.0.0:8927") && h.log("coordinator2").contains("going on without it"),
                "\(h.log("coordinator2"))")
        #expect(!h.log("coordinator2").contains("_sendspin-server._tcp"))
        let several = try net.run("ctl2", on: net.room, [Harness.binary, "ctl", "status"], environment: elsewhere)
        #expect(several.code != 0)
        #expect(several.err.contains("2 coordinators on the network: 'Lake House' at 10.79.0.1:5005") && several.err.contains("'Lake House #2' at 10.79.0.1:5105")
                && several.err.contains("choose one with --server http://HOST:PORT"), "\(several.err)")
        try net.start("b", on: net.room, [Harness.followerBinary, "--output", "null", "--name", "Study"])
        #expect(Harness.wait(timeout: 20) { h.log("b").contains("state: playing") }, "\(h.log("b"))")
        #expect(h.log("b").contains("found the coordinator on the network: 'Lake House' at 10.79.0.1:5005"), "\(h.log("b"))")
    }

    /// A Sendspin player that waits for servers (the reference `sendspin daemon` without
    /// `--url`, which announces `_sendspin._tcp` on its host with its own mDNS stack) is
    /// found by a coordinator that admits unpaired players, which connects to it: it becomes
    /// a room of the house and plays.
    @Test func theCoordinatorFindsAndConnectsToASendspinPlayerThatWaits() throws {
        let h = try Harness("discovery-sendspin")
        guard let net = try Network(h) else { return }
        defer { withExtendedLifetime(net) {} }
        h.environment["TUTTI_VCARD_DIR"] = h.directory
        // The reference player finds its own address by the default route (without one it
        // announces 127.0.0.1): the room's host has one, to the house's.
        _ = ChildProcess.output(["ip", "netns", "exec", net.room, "ip", "route", "add", "default", "via", "10.79.0.1"])
        try net.start("daemon", on: net.room, [IntegrationTests.SendspinTests.sendspin, "daemon", "--port", "8928", "--settings-dir", h.path("settings"),
                                               "--audio-device", "porch", "--disable-mpris", "--name", "Porch", "--interface", "10.79.0.2"],
                      environment: ["HOME": try IntegrationTests.SendspinTests.home(h, card: "porch")])
        try net.start("coordinator", on: net.house, [Harness.binary, "coordinator", Harness.demoSong, "--loop", "--house-name", "Lake House",
                                                    "--control-listen", "0.0.0.0:8485", "--sendspin-unpaired-access"])
        #expect(Harness.wait(timeout: 40) { h.log("coordinator").contains("Sendspin player 'Porch' joined from 10.79.0.2") },
                "coordinator: \(h.log("coordinator"))\ndaemon: \(h.log("daemon").suffix(2_000))")
        #expect(h.log("coordinator").contains("found on the network at ws://10.79.0.2:8928/sendspin"), "\(h.log("coordinator"))")
        #expect(Harness.wait(timeout: 10) { h.log("daemon").contains("Stream started with codec") }, "\(h.log("daemon").suffix(2_000))")
        // And a tutti follower finds the coordinator's Sendspin server the same way, and plays from it.
        try net.start("attic", on: net.room, [Harness.followerBinary, "--sendspin", "mdns", "--output", "null", "--name", "Attic"])
        #expect(Harness.wait(timeout: 20) { h.log("attic").contains("state: playing") }, "\(h.log("attic"))")
        #expect(h.log("attic").contains("found a Sendspin server on the network: ws://10.79.0.1:8927/sendspin"), "\(h.log("attic"))")
    }

    @Test func withoutAvahiDaemonAnAddressStillWorksAndItSaysSoOnce() throws {
        let h = try Harness("no-avahi")
        let nobody = ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=" + h.path("no-bus")]
        let clock = "127.0.0.1:\(Harness.freePort())"
        try h.start("coordinator", [Harness.binary, "coordinator", Harness.demoSong, "--multicast", "off", "--clock-listen", clock,
                                    "--control-listen", "127.0.0.1:0"], with: nobody)
        try h.start("a", [Harness.followerBinary, "--coordinator", clock, "--unicast", "--output", "null"], with: nobody)
        #expect(Harness.wait(timeout: 10) { h.log("a").contains("state: playing") }, "\(h.log("a"))")
        let log = h.log("coordinator")
        #expect(log.components(separatedBy: "not announced on the network").count == 2, "\(log)")
        // Without an address either, it says once why it waits, and keeps looking (avahi-daemon
        // may start later) until it is stopped.
        let lost = try h.start("lost", [Harness.followerBinary, "--output", "null"], with: nobody)
        #expect(Harness.wait(timeout: 5) { h.log("lost").contains("cannot look for a coordinator on the network: avahi-daemon is not running") },
                "\(h.log("lost"))")
        Thread.sleep(forTimeInterval: 6)
        #expect(lost.isRunning, "\(h.log("lost"))")
        #expect(h.log("lost").components(separatedBy: "looking again every 5 s").count == 2, "said once: \(h.log("lost"))")
        h.stop("lost")
    }
}
}
