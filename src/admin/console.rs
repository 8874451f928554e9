//! The web console's routes on the admin listener: the page at `/` and `/console/`, its
//! script and style (embedded in the binary with `include_str!`, so the console works with no
//! network access and nothing to install), and the read-only JSON API under `/api/v1/`.
//!
//! Every name shown (topic, group, client id, host) is user input; the page only ever puts
//! them into the document as text (`textContent`), never as markup, and the page is served
//! with a Content-Security-Policy that allows only its own script and style, so an injected
//! `<script>` or `onerror=` attribute could not run even if one slipped through. Nothing
//! here changes state: every route answers GET (and HEAD) only.
use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderName, HeaderValue, ALLOW, CACHE_CONTROL, CONTENT_TYPE};
use hyper::{Method, Response, StatusCode, Uri};
use serde_json::Value;

use super::api::{self, Page};
use super::api_groups;
use super::peers::PeerView;
use super::sampler::Sampler;
use crate::broker::Broker;

const INDEX_HTML: &str = include_str!("assets/index.html");
const CONSOLE_JS: &str = include_str!("assets/console.js");
const CONSOLE_CSS: &str = include_str!("assets/console.css");

/// Only the console's own script, style and API; no inline script, no frames, no forms.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; \
     frame-ancestors 'none'; form-action 'none'";

/// The longest path segment (percent-encoded) accepted as a topic or group name.
const MAX_NAME_BYTES: usize = 3 * 1024;

type Reply = Response<Full<Bytes>>;

fn reply(status: StatusCode, content_type: &'static str, body: impl Into<Bytes>) -> Reply {
    let mut r = Response::new(Full::new(body.into()));
    *r.status_mut() = status;
    let h = r.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(
        HeaderName::from_static("x-content-type-options"),
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        HeaderName::from_static("referrer-policy"),
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

fn json(status: StatusCode, value: &Value) -> Reply {
    reply(status, "application/json", value.to_string() + "\n")
}

fn not_found(what: &str) -> Reply {
    json(StatusCode::NOT_FOUND, &serde_json::json!({ "error": what }))
}

fn page(content_type: &'static str, body: &'static str) -> Reply {
    let mut r = reply(StatusCode::OK, content_type, body);
    r.headers_mut().insert(
        HeaderName::from_static("content-security-policy"),
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    r
}

/// Decodes `%XX` escapes of a path segment; None for a bad escape or bytes that are not UTF-8.
pub fn percent_decode(segment: &str) -> Option<String> {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// A name from the rest of the path (`/api/v1/topics/<name>`).
fn name(rest: &str) -> Option<String> {
    if rest.is_empty() || rest.len() > MAX_NAME_BYTES || rest.contains('/') {
        return None;
    }
    percent_decode(rest)
}

/// Answers a console or API request; None for paths the console does not own.
pub fn route(
    broker: &Broker,
    sampler: &Sampler,
    peers: &PeerView,
    method: &Method,
    uri: &Uri,
) -> Option<Reply> {
    let path = uri.path();
    let owned = matches!(path, "/" | "/console" | "/console/" | "/favicon.ico")
        || path.starts_with("/console/")
        || path.starts_with("/api/");
    if !owned {
        return None;
    }
    if method != Method::GET && method != Method::HEAD {
        let mut r = reply(
            StatusCode::METHOD_NOT_ALLOWED,
            "text/plain",
            "the console is read-only\n",
        );
        r.headers_mut()
            .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return Some(r);
    }
    Some(match path {
        "/" | "/console" | "/console/" | "/console/index.html" => {
            page("text/html; charset=utf-8", INDEX_HTML)
        }
        "/console/console.js" => page("text/javascript; charset=utf-8", CONSOLE_JS),
        "/console/console.css" => page("text/css; charset=utf-8", CONSOLE_CSS),
        // Browsers ask for it unprompted; no content rather than a 404 in their console.
        "/favicon.ico" => reply(StatusCode::NO_CONTENT, "image/x-icon", Bytes::new()),
        "/api/v1/cluster" => json(StatusCode::OK, &api::cluster(broker, &peers.read())),
        "/api/v1/topics" => json(
            StatusCode::OK,
            &api::topics(
                broker,
                sampler,
                &peers.read(),
                Page::from_query(uri.query()),
            ),
        ),
        "/api/v1/groups" => json(
            StatusCode::OK,
            &api_groups::groups(broker, &peers.read(), Page::from_query(uri.query())),
        ),
        "/api/v1/throughput" => json(StatusCode::OK, &api::throughput(sampler)),
        _ => {
            if let Some(rest) = path.strip_prefix("/api/v1/topics/") {
                let image = broker.cluster.image();
                match name(rest).and_then(|n| api::topic(broker, &peers.read(), &image, &n)) {
                    Some(v) => json(StatusCode::OK, &v),
                    None => not_found("unknown topic"),
                }
            } else if let Some(rest) = path.strip_prefix("/api/v1/groups/") {
                match name(rest).and_then(|n| api_groups::group(broker, &peers.read(), &n)) {
                    Some(v) => json(StatusCode::OK, &v),
                    None => not_found("unknown group"),
                }
            } else {
                not_found("not found")
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_decoding() {
        assert_eq!(percent_decode("a%20b%2Fc").as_deref(), Some("a b/c"));
        assert_eq!(
            percent_decode("%3Cimg%20src%3Dx%3E").as_deref(),
            Some("<img src=x>")
        );
        assert_eq!(percent_decode("bad%2"), None);
        assert_eq!(percent_decode("bad%zz"), None);
        assert_eq!(percent_decode("%ff"), None);
        assert_eq!(name("a/b"), None);
        assert_eq!(name(""), None);
    }

    #[test]
    fn assets_are_embedded_and_the_page_loads_only_its_own_files() {
        assert!(INDEX_HTML.contains("/console/console.js"));
        assert!(INDEX_HTML.contains("/console/console.css"));
        // No inline script or handler the CSP would block, and nothing from elsewhere.
        assert!(!INDEX_HTML.contains("<script>"));
        assert!(!INDEX_HTML.contains("http://") && !INDEX_HTML.contains("https://"));
        // The one URL in the script is SVG's namespace name, an identifier never fetched.
        let script = CONSOLE_JS.replace("'http://www.w3.org/2000/svg'", "");
        assert!(!script.contains("http://") && !script.contains("https://"));
        // Names go into the page as text, never as markup.
        assert!(!CONSOLE_JS.contains("innerHTML"));
        assert!(!CONSOLE_JS.contains("insertAdjacentHTML"));
        assert!(!CONSOLE_JS.contains("document.write"));
    }
}
