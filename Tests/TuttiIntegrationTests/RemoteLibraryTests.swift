import Foundation
import Testing
import TuttiAPI
import TuttiCore

extension IntegrationTests {
    /// The web remote as a person uses it on a phone, in headless Chromium: types part of an
    /// album's name, plays the album in the house, drags a track to another place in the
    /// queue, pauses; at phone, tablet and desktop sizes nothing is wider than the screen.
    @Suite("Web remote: the library from a phone")
    struct RemoteLibraryTests {
        @Test(.enabled(if: Browser.available)) func aPhoneFindsAnAlbumPlaysItAndReordersTheQueue() throws {
            let h = try Harness("web-library")
            let music = try LibraryTests.musicFolder(h)
            try h.tutti("coordinator", ["coordinator", Harness.demoSong, "--library", music, "--multicast", "off",
                                        "--clock-listen", "127.0.0.1:\(Harness.freePort())"])
            let api = try ControlAPI(h)
            #expect(Harness.wait(timeout: 20) { (try? api.get("/library", as: LibraryStatus.self))?.tracks == 6 })
            let url = try #require(h.controlURL())
            let browser = try Browser(h, url: url + "/#token=" + (try #require(h.token)), width: 412, height: 915)
            func js(_ code: String) throws -> Any? { try browser.evaluate(code) }
            try browser.command("Emulation.setDeviceMetricsOverride", ["width": 412, "height": 915, "deviceScaleFactor": 2, "mobile": true])
            #expect(Harness.wait(timeout: 10) { (try? js("document.getElementById('title').textContent")) as? String == "Tutti" })

            // The library, by its tab: albums with their covers.
            _ = try js("document.getElementById('tab-library').click()")
            #expect(Harness.wait(timeout: 5) { (try? js("document.querySelectorAll('#libraryBox .tile').length")) as? Int == 3 })
            try browser.screenshot("library-phone-albums")

            // Part of the album's name, typed (no accents): the album shows, and opens.
            let agaetis = try #require(try api.get("/library/search?q=agaetis", as: LibrarySearch.self).albums.first)
            _ = try js("document.getElementById('search').focus()")
            try browser.command("Input.insertText", ["text": "agae"])
            #expect(Harness.wait(timeout: 5) { (try? js("document.querySelectorAll('#libraryBox h4').length")) as? Int == 2 },
                    "the search shows albums and tracks")
            #expect((try? js("document.querySelectorAll('#libraryBox .tile').length")) as? Int == 1, "one album")
            #expect((try? js("!!document.querySelector('#libraryBox #album-\(agaetis.id)')")) as? Bool == true, "the album")
            #expect((try? js("document.querySelectorAll('#libraryBox .track').length")) as? Int == 3, "and its three tracks")
            try browser.screenshot("library-phone-search")
            _ = try js("document.querySelector('#album-\(agaetis.id)').click()")
            #expect(Harness.wait(timeout: 5) { (try? js("!!document.getElementById('playAll')")) as? Bool == true })
            // Its cover shows, square, beside its title.
            let cover = try js("(() => { const r = document.querySelector('.detail .cover').getBoundingClientRect(); return [r.width, r.height]; })()") as? [Double] ?? []
            #expect(cover.count == 2 && cover[0] > 50 && abs(cover[0] - cover[1]) < 1, "the album's cover: \(cover)")
            #expect(Harness.wait(timeout: 5) { ((try? js("getComputedStyle(document.querySelector('.detail .cover')).backgroundImage")) as? String)?.contains("/art") == true })
            try browser.screenshot("library-phone-album")
            _ = try js("document.getElementById('playAll').click()")
            #expect(Harness.wait(timeout: 5) { (try? api.nowPlaying)?.title == "Élan" && (try? api.nowPlaying)?.state == .playing },
                    "the album plays in the house")
            #expect(try api.queue.items.map(\.title) == ["Tutti", "Élan", "Second Wind", "Third Light"])
            #expect(Harness.wait(timeout: 5) { (try? js("document.getElementById('miniTitle').textContent")) as? String == "Élan" },
                    "the dock shows what plays")
            #expect(Harness.wait(timeout: 5) { ((try? js("document.getElementById('miniArt').style.backgroundImage")) as? String)?.contains("artwork") == true },
                    "with the album's cover")

            // The queue: Third Light dragged by its handle above Second Wind, as a finger would.
            _ = try js("document.getElementById('tab-queue').click()")
            #expect(Harness.wait(timeout: 5) { (try? js("document.querySelectorAll('#queue li').length")) as? Int == 4 })
            try browser.screenshot("library-phone-queue")
            let box = try js("""
                (() => { const items = document.querySelectorAll('#queue li'), h = items[3].querySelector('.handle').getBoundingClientRect(),
                  t = items[2].getBoundingClientRect(); return [h.left + h.width / 2, h.top + h.height / 2, t.top + 4]; })()
                """) as? [Double] ?? []
            try #require(box.count == 3)
            try browser.command("Input.dispatchMouseEvent", ["type": "mousePressed", "x": box[0], "y": box[1], "button": "left", "clickCount": 1])
            for step in 1...6 {
                let y = box[1] + (box[2] - box[1]) * Double(step) / 6
                try browser.command("Input.dispatchMouseEvent", ["type": "mouseMoved", "x": box[0], "y": y, "button": "left", "buttons": 1])
            }
            try browser.command("Input.dispatchMouseEvent", ["type": "mouseReleased", "x": box[0], "y": box[2], "button": "left", "clickCount": 1])
            #expect(Harness.wait(timeout: 5) { (try? api.queue.items.map(\.title)) == ["Tutti", "Élan", "Third Light", "Second Wind"] },
                    "the drag moved the track in the house's queue: \((try? api.queue.items.map(\.title)) ?? [])")
            let shown = "[...document.querySelectorAll('#queue li .title')].map(e => e.textContent.split(' — ')[0]).join('|')"
            #expect(Harness.wait(timeout: 5) { (try? js(shown)) as? String == "1. Tutti|2. Élan|3. Third Light|4. Second Wind" },
                    "the page shows the new order: \((try? js(shown)) ?? "")")
            #expect(try api.nowPlaying.title == "Élan", "the drag played nothing")

            // Pause from the dock.
            _ = try js("document.getElementById('miniToggle').click()")
            #expect(Harness.wait(timeout: 3) { (try? api.nowPlaying.state) == .paused })

            // No sideways scrolling in any view, at phone, tablet and desktop sizes.
            for (width, height, mobile) in [(360, 780, true), (430, 932, true), (820, 1180, true), (1440, 900, false)] {
                try browser.command("Emulation.setDeviceMetricsOverride", ["width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile])
                for view in ["now", "library", "queue", "rooms"] {
                    _ = try js("document.getElementById('tab-\(view)').click()")
                    if view == "library" { _ = try js("document.querySelector('#browse button').click()") }
                    Thread.sleep(forTimeInterval: 0.3)
                    let fits = try js("""
                        (() => { const tabs = document.getElementById('tabs').getBoundingClientRect();
                          return { page: document.documentElement.scrollWidth, screen: innerWidth, tabs: tabs.bottom <= innerHeight && tabs.right <= innerWidth }; })()
                        """) as? [String: Any] ?? [:]
                    #expect((fits["page"] as? Double ?? .infinity) <= Double(width) && fits["tabs"] as? Bool == true, "\(width) px, \(view): \(fits)")
                }
                try browser.screenshot("library-\(width)")
            }
        }
    }
}
