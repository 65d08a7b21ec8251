import Foundation
import Testing
import TuttiAPI
import TuttiCore

extension IntegrationTests {
    /// The web remote as finished as the apps people compare it with (issue 60), in headless
    /// Chromium with real touch and key events: at 360, 412 and 1440 px nothing is wider than
    /// the screen or hidden under the dock; a token link opened in a tab already on the
    /// remote is taken; the group's volume shows what the house did and why; messages go
    /// when they are stale; every control has a name in the accessibility tree and every
    /// action is reachable by keyboard; a light theme; the phone's lock screen; a room's
    /// name, delay and forgetting, a zone's name; the lyric page on a phone.
    @Suite("Web remote: finished for phones, keyboards and screen readers")
    struct RemoteFinishTests {
        /// A key pressed and let go (Tab, Enter, ArrowUp...).
        static func press(_ browser: Browser, _ key: String, shift: Bool = false) throws {
            let codes = ["Tab": 9, "Enter": 13, "ArrowUp": 38, "ArrowDown": 40, "Escape": 27, " ": 32]
            var event: [String: Any] = ["key": key, "code": key == " " ? "Space" : key, "windowsVirtualKeyCode": codes[key] ?? 0,
                                        "modifiers": shift ? 8 : 0]
            if key == "Enter" { event["text"] = "\r" }
            if key == " " { event["text"] = " " }
            try browser.command("Input.dispatchKeyEvent", event.merging(["type": "keyDown"]) { $1 })
            try browser.command("Input.dispatchKeyEvent", event.merging(["type": "keyUp"]) { $1 })
        }

        /// A finger's tap at the middle of the element `selector` finds.
        static func tap(_ browser: Browser, _ selector: String) throws {
            // Touched where it is once the scroll has been drawn (two frames later): touched at
            // once, Chromium may hit-test the page where it was before it scrolled.
            let box = try browser.evaluate("""
                (async () => { const e = document.querySelector('\(selector)'); e.scrollIntoView({ block: 'center' });
                  await new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)));
                  const r = e.getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; })()
                """) as? [Double] ?? []
            try #require(box.count == 2, "nothing at \(selector)")
            let point: [String: Any] = ["x": box[0], "y": box[1]]
            try browser.command("Input.dispatchTouchEvent", ["type": "touchStart", "touchPoints": [point]])
            try browser.command("Input.dispatchTouchEvent", ["type": "touchEnd", "touchPoints": []])
        }

        /// The interactive nodes of the page's accessibility tree that have no name.
        static func unnamedControls(_ browser: Browser) throws -> [String] {
            let tree = try browser.command("Accessibility.getFullAXTree")
            let roles: Set<String> = ["button", "slider", "combobox", "textbox", "searchbox", "spinbutton", "checkbox", "link", "menuitem", "tab"]
            return (tree["nodes"] as? [[String: Any]] ?? []).compactMap { node in
                guard node["ignored"] as? Bool != true, let role = (node["role"] as? [String: Any])?["value"] as? String, roles.contains(role) else { return nil }
                let name = ((node["name"] as? [String: Any])?["value"] as? String)?.trimmingCharacters(in: .whitespaces) ?? ""
                return name.isEmpty ? "\(role) (backend node \(node["backendDOMNodeId"] ?? "?"))" : nil
            }
        }

        @Test(.enabled(if: Browser.available)) func aPhoneAKeyboardAndAScreenReaderUseTheWholeRemote() throws {
            let h = try Harness("web-finish")
            let music = try LibraryTests.musicFolder(h)
            let clock = "127.0.0.1:\(Harness.freePort())"
            try h.tutti("coordinator", ["coordinator", Harness.demoSong, "--library", music, "--multicast", "off", "--clock-listen", clock])
            for room in ["Kitchen", "Bath"] {
                try h.tutti(room, ["follower", "--coordinator", clock, "--unicast", "--output", "null", "--name", room, "--status-interval", "1"])
            }
            let api = try ControlAPI(h)
            #expect(Harness.wait(timeout: 20) { (try? api.get("/library", as: LibraryStatus.self))?.tracks == 6 })
            #expect(Harness.wait(timeout: 10) { (try? api.rooms.filter(\.connected).count) == 2 })
            let url = try #require(h.controlURL()), token = try #require(h.token)

            // Opened without the token: the page asks for it. The link `tutti ctl remote`
            // prints, opened in the same tab, is only a new fragment: taken, and cleared.
            let browser = try Browser(h, url: url + "/", width: 412, height: 915)
            func js(_ code: String) throws -> Any? { try browser.evaluate(code) }
            try browser.command("Emulation.setDeviceMetricsOverride", ["width": 412, "height": 915, "deviceScaleFactor": 2, "mobile": true])
            try browser.command("Emulation.setTouchEmulationEnabled", ["enabled": true, "maxTouchPoints": 5])
            #expect(Harness.wait(timeout: 10) { (try? js("getComputedStyle(document.getElementById('tokenBox')).display")) as? String == "flex" })
            #expect((try? js("document.getElementById('token').type")) as? String == "password", "the token field hides what is typed")
            _ = try js("location.hash = '#token=\(token)'")
            #expect(Harness.wait(timeout: 5) { (try? js("localStorage.getItem('tutti-token')")) as? String == token }, "the token was taken")
            #expect((try? js("location.hash")) as? String == "" && (try? js("location.href.includes('token')")) as? Bool == false,
                    "and is out of the address bar")
            #expect((try? js("getComputedStyle(document.getElementById('tokenBox')).display")) as? String == "none")
            #expect(Harness.wait(timeout: 10) { (try? js("document.getElementById('title').textContent")) as? String == "Tutti" })

            // At every size, in every view, nothing wider than the screen, and the view's end
            // (scrolled to) above the dock; on a phone the tabs all on the screen.
            _ = try js("document.getElementById('tab-library').click()")
            #expect(Harness.wait(timeout: 5) { (try? js("document.querySelectorAll('#libraryBox .tile').length")) as? Int == 3 })
            _ = try js("document.getElementById('tab-rooms').click()")
            try Self.tap(browser, "#pair")
            #expect(Harness.wait(timeout: 5) { ((try? js("document.getElementById('pairCode').textContent")) as? String)?.contains("tutti pair") == true })
            for width in [360, 412, 1440] {
                let height = width == 1440 ? 900 : width == 360 ? 740 : 915
                try browser.command("Emulation.setDeviceMetricsOverride", ["width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 1000])
                for view in ["now", "library", "queue", "rooms"] {
                    _ = try js("document.getElementById('tab-\(view)').click()")
                    Thread.sleep(forTimeInterval: 0.3)
                    let fit = try js("""
                        (() => { scrollTo(0, document.body.scrollHeight); const view = document.getElementById('view-\(view)');
                          const items = [...view.querySelectorAll('.tile, li, .row, .card > *')].filter(e => e.offsetParent !== null);
                          const last = items.length ? Math.max(...items.map(e => e.getBoundingClientRect().bottom)) : 0;
                          const dock = document.getElementById('dock').getBoundingClientRect().top;
                          const tabs = [...document.querySelectorAll('#tabs button')].map(b => b.getBoundingClientRect().right);
                          return { page: document.documentElement.scrollWidth, screen: innerWidth, last, dock, tabs: Math.max(...tabs) }; })()
                        """) as? [String: Any] ?? [:]
                    let page = fit["page"] as? Double ?? .infinity, screen = fit["screen"] as? Double ?? 0
                    let last = fit["last"] as? Double ?? .infinity, dock = fit["dock"] as? Double ?? 0, tabs = fit["tabs"] as? Double ?? .infinity
                    #expect(page <= screen && last <= dock + 0.5 && tabs <= screen, "\(width) px, \(view): \(fit)")
                    try browser.screenshot("finish-\(width)-\(view)")
                }
            }
            try browser.command("Emulation.setDeviceMetricsOverride", ["width": 412, "height": 915, "deviceScaleFactor": 2, "mobile": true])

            // The group's volume: Bath at 50, Kitchen at 100 (75 together). 80 asked: Kitchen
            // can go no higher, the rooms keep their balance, the page says so at once.
            _ = try api.change("PUT", "/rooms/Bath", #"{"volume": 50}"#)
            _ = try api.change("PUT", "/rooms/Kitchen", #"{"volume": 100}"#)
            _ = try js("document.getElementById('tab-rooms').click()")
            #expect(Harness.wait(timeout: 5) { (try? js("document.querySelector('#group .pct').textContent")) as? String == "75%" })
            _ = try js("const r = document.querySelector('#group input'); r.value = 80; r.dispatchEvent(new Event('change'))")
            #expect(Harness.wait(timeout: 1.5) { (try? js("document.querySelector('#group .pct').textContent")) as? String == "77%" },
                    "the real value at once: \((try? js("document.querySelector('#group .pct').textContent")) ?? "")")
            let note = (try? js("(document.getElementById('groupNote') || {}).textContent")) as? String ?? ""
            #expect(note.contains("asked 80 %") && note.contains("Kitchen is at 100 %"), "\(note)")
            #expect(try api.nowPlaying.volume == 76.7)

            // A room's settings from its ⋯: a new name and an output delay, by keyboard.
            try Self.tap(browser, "#room-Bath .more")
            #expect(Harness.wait(timeout: 3) { (try? js("document.activeElement.getAttribute('aria-label')")) as? String == "name of Bath" })
            _ = try js("document.activeElement.select()")
            try browser.command("Input.insertText", ["text": "Bathroom"])
            try Self.press(browser, "Tab")
            _ = try js("document.activeElement.select()")
            try browser.command("Input.insertText", ["text": "35"])
            try Self.press(browser, "Enter")
            #expect(Harness.wait(timeout: 3) { (try? api.rooms.first { $0.key == "Bath" }).map { $0.name == "Bathroom" && $0.outputDelayMs == 35 } == true },
                    "\((try? api.rooms) ?? [])")
            // A zone's new name.
            _ = try js("window.prompt = () => 'Downstairs'")
            try Self.tap(browser, "#renameZone")
            #expect(Harness.wait(timeout: 3) { (try? api.get("/zones", as: [ZoneView].self).first?.name) == "Downstairs" })
            // Every control has a name, here with a room's settings open.
            _ = try js("document.querySelector('#room-Kitchen .more').click()")
            #expect(try Self.unnamedControls(browser) == [], "rooms")
            // Forgotten: gone from the house.
            _ = try js("window.confirm = () => true")
            try Self.tap(browser, "#edit-Kitchen .danger")
            #expect(Harness.wait(timeout: 3) { (try? api.rooms.contains { $0.key == "Kitchen" }) == false })

            // Messages: good news goes by itself; a lost connection goes when it is back.
            _ = try js("document.getElementById('tab-library').click()")
            #expect(Harness.wait(timeout: 5) { (try? js("document.querySelectorAll('#libraryBox .tile').length")) as? Int == 3 })
            // By keyboard from the search field to an album, which opens with Enter.
            _ = try js("document.getElementById('search').focus()")
            var reached = false
            for _ in 0..<16 where !reached {
                try Self.press(browser, "Tab")
                reached = ((try? js("document.activeElement.classList.contains('tile') && document.activeElement.getAttribute('aria-label')")) as? String)?
                    .hasPrefix("album Ágætis") == true
            }
            #expect(reached, "Tab reaches an album: \((try? js("document.activeElement.outerHTML.slice(0, 120)")) ?? "")")
            try Self.press(browser, "Enter")
            #expect(Harness.wait(timeout: 3) { (try? js("!!document.getElementById('playAll')")) as? Bool == true }, "Enter opened it")
            #expect(try Self.unnamedControls(browser) == [], "album")
            try Self.tap(browser, "#queueAll")
            #expect(Harness.wait(timeout: 3) { ((try? js("document.getElementById('message').textContent")) as? String)?.hasPrefix("added") == true })
            #expect(Harness.wait(timeout: 6) { (try? js("document.getElementById('message').textContent")) as? String == "" }, "the message went")
            _ = try js("socket.close()")
            #expect(Harness.wait(timeout: 2) { (try? js("document.getElementById('message').textContent")) as? String == "cannot reach the coordinator" })
            #expect(Harness.wait(timeout: 5) { (try? js("document.getElementById('message').textContent")) as? String == "" },
                    "the message went when the connection came back")

            // The queue, reordered by keyboard: the handle of the last item, ↑ twice.
            _ = try js("document.getElementById('tab-queue').click()")
            #expect(Harness.wait(timeout: 5) { (try? js("document.querySelectorAll('#queue li').length")) as? Int == 4 })
            _ = try js("document.querySelectorAll('#queue .handle')[3].focus()")
            try Self.press(browser, "ArrowUp")
            #expect(Harness.wait(timeout: 3) { (try? api.queue.items.map(\.title)) == ["Tutti", "Élan", "Third Light", "Second Wind"] })
            #expect(Harness.wait(timeout: 3) { ((try? js("document.activeElement.getAttribute('aria-label')")) as? String)?.hasPrefix("move Third Light") == true },
                    "the moved item keeps the focus")
            // Keys pressed faster than the house answers: each moves it on from where the last left it.
            try Self.press(browser, "ArrowUp")
            try Self.press(browser, "ArrowUp")
            try Self.press(browser, "ArrowDown")
            #expect(Harness.wait(timeout: 3) { (try? api.queue.items.map(\.title)) == ["Tutti", "Third Light", "Élan", "Second Wind"] })
            #expect(Harness.wait(timeout: 3) { ((try? js("document.querySelectorAll('#queue .title')[1].textContent")) as? String)?.hasPrefix("2. Third Light") == true },
                    "the page shows where the house has it")
            // A queue item plays with Enter.
            _ = try js("document.querySelectorAll('#queue .title')[1].focus()")
            try Self.press(browser, "Enter")
            #expect(Harness.wait(timeout: 5) { (try? api.nowPlaying.title) == "Third Light" })
            #expect(try Self.unnamedControls(browser) == [], "queue")

            // Now playing: every control named; the phone's lock screen knows what plays.
            _ = try js("document.getElementById('tab-now').click()")
            #expect(try Self.unnamedControls(browser) == [], "now")
            #expect(Harness.wait(timeout: 3) { (try? js("navigator.mediaSession.metadata && navigator.mediaSession.metadata.title")) as? String == "Third Light" })
            #expect((try? js("navigator.mediaSession.metadata.artist + ' / ' + navigator.mediaSession.metadata.album")) as? String == "Sigur Test / Ágætis Byrjun")
            #expect((try? js("navigator.mediaSession.metadata.artwork[0].src.includes('artwork')")) as? Bool == true)
            #expect((try? js("navigator.mediaSession.playbackState")) as? String == "playing")
            try Self.tap(browser, "#lockScreen")
            #expect(Harness.wait(timeout: 3) { (try? js("!!lockScreen.audio && !lockScreen.audio.paused")) as? Bool == true },
                    "the page plays silence so that the phone shows the house's controls")
            Thread.sleep(forTimeInterval: 1)
            #expect((try? js("document.getElementById('lockScreen').getAttribute('aria-pressed')")) as? String == "true",
                    "\((try? js("document.getElementById('message').textContent")) ?? "")")
            #expect((try? js("!!lockScreen.audio && !lockScreen.audio.paused && lockScreen.audio.currentTime > 0")) as? Bool == true, "it plays on")

            // A light room, a light page.
            try browser.command("Emulation.setEmulatedMedia", ["features": [["name": "prefers-color-scheme", "value": "light"]]])
            #expect((try? js("getComputedStyle(document.body).backgroundColor")) as? String == "rgb(243, 244, 246)")
            try browser.screenshot("finish-light")
            try browser.command("Emulation.setEmulatedMedia", ["features": [["name": "prefers-color-scheme", "value": "dark"]]])
            #expect((try? js("getComputedStyle(document.body).backgroundColor")) as? String == "rgb(16, 19, 24)")

            // The lyric page on a phone: the "no lyrics" card inside the screen; an icon.
            _ = try js("location.href = '/lyrics?room=Bathroom'")
            #expect(Harness.wait(timeout: 5) { (try? js("getComputedStyle(document.getElementById('card')).display")) as? String == "flex" })
            try browser.command("Emulation.setDeviceMetricsOverride", ["width": 360, "height": 740, "deviceScaleFactor": 2, "mobile": true])
            let card = try js("""
                (() => { const c = document.getElementById('card'), b = document.getElementById('cardTitle').getBoundingClientRect();
                  return [parseFloat(getComputedStyle(c).paddingLeft), b.left, b.right, innerWidth]; })()
                """) as? [Double] ?? []
            #expect(card.count == 4 && card[0] >= 10 && card[1] >= 10 && card[2] <= card[3] - 10, "\(card)")
            try browser.screenshot("finish-lyrics-360")
            #expect(try js("fetch('/favicon.ico').then(r => r.status + ' ' + r.headers.get('content-type'))") as? String == "200 image/svg+xml")
        }
    }
}
