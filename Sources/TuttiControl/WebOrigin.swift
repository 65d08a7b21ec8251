import Hummingbird
import TuttiCore

/// What keeps the control API's web origin from being turned against itself: whatever it
/// serves is what it says it is, and its pages run only their own code.
enum WebOrigin {
    /// The policy of the house's own pages (the web remote, the lyric screen): scripts from
    /// their own files only (no inline script runs, so text that slipped into a page as markup
    /// cannot), styles, images and connections (the event stream) from this origin only,
    /// never framed by another site.
    static let pagePolicy = "default-src 'self'; script-src 'self'; style-src 'self'; "
        + "img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
    /// The policy of everything else (JSON, artwork): nothing in it runs, even opened as a page.
    static let dataPolicy = "default-src 'none'; sandbox; frame-ancestors 'none'"
}

/// Every answer says its type is the one it has (`nosniff`), and carries the policy of what
/// it is: a page's, or nothing-runs for the rest.
struct OriginHeadersMiddleware: RouterMiddleware {
    func handle(_ request: Request, context: ControlContext,
                next: (Request, ControlContext) async throws -> Response) async throws -> Response {
        var response = try await next(request, context)
        response.headers[.xContentTypeOptions] = "nosniff"
        if response.headers[.contentSecurityPolicy] == nil {
            let page = response.headers[.contentType]?.hasPrefix("text/html") == true
            response.headers[.contentSecurityPolicy] = page ? WebOrigin.pagePolicy : WebOrigin.dataPolicy
        }
        return response
    }
}
