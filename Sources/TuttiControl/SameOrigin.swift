import Foundation
import TuttiAPI

/// Whether a WebSocket upgrade may go ahead: a browser names the page that opens the socket
/// (`Origin`), and only the coordinator's own pages (the web remote, the lyric screen) may;
/// a page from anywhere else, opened in a browser in the house, may not. Clients that are not
/// browsers (`tutti lyrics`, `tutti ctl`) send no `Origin` and are let in.
public enum SameOrigin {
    public static func allows(origin: String?, host: String?) -> Bool {
        guard let origin else { return true }
        guard let host, let page = URLComponents(string: origin), let scheme = page.scheme?.lowercased(),
              let pageHost = page.host?.lowercased(), !pageHost.isEmpty,
              let own = URLComponents(string: "\(scheme)://\(host)"), let ownHost = own.host?.lowercased()
        else { return false }
        let standard = scheme == "https" ? 443 : 80
        return pageHost == ownHost && (page.port ?? standard) == (own.port ?? standard)
    }
}
