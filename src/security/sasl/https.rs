//! The one HTTP request Strata makes: a blocking HTTPS GET of a JWKS document (issue 13,
//! oauth slice), on the JWKS refresher's own thread. It is HTTP/1.1 with `Connection: close`
//! over rustls (already a dependency, so no HTTP client crate is added): the status must be
//! 200, the body is read with its `Content-Length`, chunked, or to the end, and is refused
//! past `max_bytes`; every step has a timeout. The TLS client configuration is the caller's:
//! the system's roots, or the `ssl.*` options of the listener's OAUTHBEARER JAAS entry.
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use rustls_pki_types::ServerName;

const TIMEOUT: Duration = Duration::from_secs(10);

/// `https://host[:port][/path]` split into host, port and path.
fn split_url(url: &str) -> Result<(String, u16, String), String> {
    let rest = url
        .get(..8)
        .filter(|s| s.eq_ignore_ascii_case("https://"))
        .map(|_| &url[8..])
        .ok_or_else(|| format!("{url} is not an https URL"))?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !p.contains(']') => (
            h,
            p.parse::<u16>().map_err(|_| format!("bad port in {url}"))?,
        ),
        _ => (authority, 443),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() {
        return Err(format!("no host in {url}"));
    }
    Ok((host.to_string(), port, path.to_string()))
}

/// A client configuration checking servers against `roots`, with rustls' defaults.
pub fn config_for(roots: &rustls::RootCertStore) -> Result<Arc<rustls::ClientConfig>, String> {
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| e.to_string())?
    .with_root_certificates(roots.clone())
    .with_no_client_auth();
    Ok(Arc::new(config))
}

/// GETs `url` over TLS set up by `config`; the body of a 200 answer.
pub fn get(
    url: &str,
    config: &Arc<rustls::ClientConfig>,
    max_bytes: usize,
) -> Result<Vec<u8>, String> {
    let (host, port, path) = split_url(url)?;
    let addr = (host.as_str(), port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {host}: {e}"))?
        .next()
        .ok_or_else(|| format!("{host} has no address"))?;
    let tcp = TcpStream::connect_timeout(&addr, TIMEOUT)
        .map_err(|e| format!("cannot connect to {addr}: {e}"))?;
    tcp.set_read_timeout(Some(TIMEOUT))
        .map_err(|e| e.to_string())?;
    tcp.set_write_timeout(Some(TIMEOUT))
        .map_err(|e| e.to_string())?;
    let name = ServerName::try_from(host.clone()).map_err(|e| format!("{host}: {e}"))?;
    let conn = rustls::ClientConnection::new(config.clone(), name).map_err(|e| e.to_string())?;
    let mut tls = rustls::StreamOwned::new(conn, tcp);
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nAccept: application/json\r\n\
         User-Agent: strata\r\nConnection: close\r\n\r\n"
    );
    tls.write_all(request.as_bytes())
        .map_err(|e| format!("{url}: {e}"))?;
    let mut raw = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    loop {
        match tls.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                raw.extend_from_slice(&buf[..n]);
                if raw.len() > max_bytes + 16 * 1024 {
                    return Err(format!(
                        "{url}: the answer is larger than {max_bytes} bytes"
                    ));
                }
            }
            // Servers often close without close_notify after `Connection: close`.
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => break,
            Err(e) => return Err(format!("{url}: {e}")),
        }
    }
    parse_response(&raw, max_bytes).map_err(|e| format!("{url}: {e}"))
}

/// The body of an HTTP/1.1 response whose status is 200.
pub fn parse_response(raw: &[u8], max_bytes: usize) -> Result<Vec<u8>, String> {
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("the answer has no complete header")?;
    let head = std::str::from_utf8(&raw[..end]).map_err(|_| "the header is not text")?;
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap_or_default();
    let code = status.split(' ').nth(1).unwrap_or_default();
    if !status.starts_with("HTTP/1.") || code != "200" {
        return Err(format!("answered {status:?}"));
    }
    let mut chunked = false;
    let mut length = None;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.trim().eq_ignore_ascii_case("transfer-encoding") {
            chunked = value.to_ascii_lowercase().contains("chunked");
        } else if name.trim().eq_ignore_ascii_case("content-length") {
            length = Some(value.parse::<usize>().map_err(|_| "bad Content-Length")?);
        }
    }
    let body = &raw[end + 4..];
    let out = if chunked {
        let mut out = Vec::new();
        let mut rest = body;
        loop {
            let line_end = rest
                .windows(2)
                .position(|w| w == b"\r\n")
                .ok_or("a truncated chunk")?;
            let size_text = std::str::from_utf8(&rest[..line_end]).map_err(|_| "bad chunk")?;
            let size_text = size_text.split(';').next().unwrap_or_default().trim();
            let size = usize::from_str_radix(size_text, 16).map_err(|_| "bad chunk size")?;
            rest = &rest[line_end + 2..];
            if size == 0 {
                break;
            }
            if rest.len() < size || out.len() + size > max_bytes {
                return Err("a truncated or oversized chunked body".into());
            }
            out.extend_from_slice(&rest[..size]);
            rest = rest.get(size + 2..).ok_or("a truncated chunk")?;
        }
        out
    } else if let Some(n) = length {
        body.get(..n)
            .ok_or("a body shorter than its Content-Length")?
            .to_vec()
    } else {
        body.to_vec()
    };
    if out.len() > max_bytes {
        return Err(format!("the body is larger than {max_bytes} bytes"));
    }
    Ok(out)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    #[test]
    fn urls_and_responses_parse() {
        assert_eq!(
            split_url("https://idp.example/realms/k/certs").unwrap(),
            ("idp.example".into(), 443, "/realms/k/certs".into())
        );
        assert_eq!(
            split_url("https://127.0.0.1:8443").unwrap(),
            ("127.0.0.1".into(), 8443, "/".into())
        );
        assert!(split_url("http://idp.example/").is_err());
        let ok = b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nabcdEXTRA";
        assert_eq!(parse_response(ok, 100).unwrap(), b"abcd");
        let chunked =
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n";
        assert_eq!(parse_response(chunked, 100).unwrap(), b"abcde");
        let to_end = b"HTTP/1.0 200 OK\r\n\r\n{}";
        assert_eq!(parse_response(to_end, 100).unwrap(), b"{}");
        assert!(parse_response(b"HTTP/1.1 404 Not Found\r\n\r\n", 100)
            .unwrap_err()
            .contains("404"));
        assert!(parse_response(b"HTTP/1.1 200 OK\r\n\r\n0123456789", 5).is_err());
        assert!(parse_response(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc", 100).is_err());
        assert!(parse_response(b"HTTP/1.1 200", 100).is_err());
    }

    /// A CA (its PEM certificate) and a server configuration for 127.0.0.1 signed by it.
    pub(in crate::security::sasl) fn ca_pem_and_server() -> (String, rustls::ServerConfig) {
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let ca_cert = ca_params.self_signed(&ca_key).unwrap();
        let issuer = rcgen::Issuer::new(ca_params, ca_key);
        let leaf_key = rcgen::KeyPair::generate().unwrap();
        let leaf = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()])
            .unwrap()
            .signed_by(&leaf_key, &issuer)
            .unwrap();
        let server = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![leaf.der().clone()],
            rustls_pki_types::PrivateKeyDer::Pkcs8(leaf_key.serialize_der().into()),
        )
        .unwrap();
        (ca_cert.pem(), server)
    }

    /// A CA's roots and a server configuration for 127.0.0.1 signed by it.
    fn ca_and_server() -> (rustls::RootCertStore, rustls::ServerConfig) {
        use rustls_pki_types::pem::PemObject;
        let (pem, server) = ca_pem_and_server();
        let mut roots = rustls::RootCertStore::empty();
        let ca = rustls_pki_types::CertificateDer::from_pem_slice(pem.as_bytes()).unwrap();
        roots.add(ca).unwrap();
        (roots, server)
    }

    /// Answers one request on an accepted connection with `answer`; the request's head.
    pub(in crate::security::sasl) fn answer_one(
        server: Arc<rustls::ServerConfig>,
        tcp: std::net::TcpStream,
        answer: &[u8],
    ) -> String {
        let conn = rustls::ServerConnection::new(server).unwrap();
        let mut tls = rustls::StreamOwned::new(conn, tcp);
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            // A client that refuses the certificate ends here.
            if tls.read(&mut byte).unwrap_or(0) == 0 {
                break;
            }
            head.push(byte[0]);
        }
        let _ = tls.write_all(answer);
        tls.conn.send_close_notify();
        let _ = tls.flush();
        String::from_utf8_lossy(&head).into_owned()
    }

    /// Serves one connection: reads the request head, answers `answer`, closes.
    fn serve_once(
        server: rustls::ServerConfig,
        answer: Vec<u8>,
    ) -> (u16, std::thread::JoinHandle<String>) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let handle = std::thread::spawn(move || {
            let (tcp, _) = listener.accept().unwrap();
            answer_one(Arc::new(server), tcp, &answer)
        });
        (port, handle)
    }

    #[test]
    fn a_jwks_is_fetched_over_https_and_an_untrusted_server_is_refused() {
        let (roots, server) = ca_and_server();
        let body = br#"{"keys":[]}"#;
        let mut answer = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .into_bytes();
        answer.extend_from_slice(body);
        let (port, served) = serve_once(server, answer);
        let config = config_for(&roots).unwrap();
        let got = get(&format!("https://127.0.0.1:{port}/keys"), &config, 1 << 20).unwrap();
        assert_eq!(got, body);
        let head = served.join().unwrap();
        assert!(head.starts_with("GET /keys HTTP/1.1\r\n"), "{head}");
        assert!(head.contains("Host: 127.0.0.1\r\n"), "{head}");
        // A server whose certificate the roots do not vouch for: refused, not fetched.
        let (other_roots, _) = ca_and_server();
        let (_, server) = ca_and_server();
        let (port, served) = serve_once(server, b"HTTP/1.1 200 OK\r\n\r\n{}".to_vec());
        let other = config_for(&other_roots).unwrap();
        let err = get(&format!("https://127.0.0.1:{port}/"), &other, 1 << 20).unwrap_err();
        assert!(err.to_lowercase().contains("certificate"), "{err}");
        let _ = served.join();
    }
}
