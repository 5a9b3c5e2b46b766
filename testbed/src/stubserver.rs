//! A scriptable HTTP server for tests of HTTP clients (the TSBS stand-ins, tsbsctl probes):
//! binds 127.0.0.1 on a port the OS picks, answers every request with a handler the test gives,
//! records every request (method, URL, headers, decoded body), and stops on drop.

use std::io::Read;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub struct StubRequest {
    pub method: String,
    /// Path and query, as sent (`/v1/sql?sql=...&db=x`).
    pub url: String,
    /// Lower-case names.
    pub headers: Vec<(String, String)>,
    /// The body after `Content-Encoding: gzip` decoding.
    pub body: Vec<u8>,
    /// Whether the body arrived gzip-encoded.
    pub gzip: bool,
}

impl StubRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }
    pub fn path(&self) -> &str {
        self.url.split('?').next().unwrap_or("")
    }
    pub fn query(&self) -> Option<&str> {
        self.url.split_once('?').map(|(_, q)| q)
    }
    /// A query-string parameter, decoded.
    pub fn param(&self, name: &str) -> Option<String> {
        find_param(self.query()?, name)
    }
    /// A form-body (`application/x-www-form-urlencoded`) parameter, decoded.
    pub fn form(&self, name: &str) -> Option<String> {
        find_param(&self.body_text(), name)
    }
    pub fn body_text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

fn find_param(query: &str, name: &str) -> Option<String> {
    query.split('&').find_map(|kv| {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        (crate::queryfile::form_decode(k) == name).then(|| crate::queryfile::form_decode(v))
    })
}

/// What the handler answers.
#[derive(Debug, Clone)]
pub struct StubResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl StubResponse {
    pub fn new(status: u16, body: impl Into<Vec<u8>>) -> StubResponse {
        StubResponse {
            status,
            headers: Vec::new(),
            body: body.into(),
        }
    }
    pub fn json(status: u16, value: &serde_json::Value) -> StubResponse {
        StubResponse::new(status, value.to_string()).header("Content-Type", "application/json")
    }
    pub fn header(mut self, name: &str, value: &str) -> StubResponse {
        self.headers.push((name.into(), value.into()));
        self
    }
}

type Handler = dyn Fn(&StubRequest) -> StubResponse + Send + Sync;

/// The running server; stopped (and its thread joined) on drop.
pub struct StubServer {
    server: Arc<tiny_http::Server>,
    port: u16,
    requests: Arc<Mutex<Vec<StubRequest>>>,
    thread: Option<JoinHandle<()>>,
}

impl StubServer {
    /// Starts serving; each request is handled on its own thread, so slow answers do not
    /// serialise concurrent clients.
    pub fn start(
        handler: impl Fn(&StubRequest) -> StubResponse + Send + Sync + 'static,
    ) -> std::io::Result<StubServer> {
        let server =
            Arc::new(tiny_http::Server::http("127.0.0.1:0").map_err(std::io::Error::other)?);
        let port = server
            .server_addr()
            .to_ip()
            .map(|a| a.port())
            .ok_or_else(|| std::io::Error::other("no IP address"))?;
        let requests = Arc::new(Mutex::new(Vec::new()));
        let handler: Arc<Handler> = Arc::new(handler);
        let (srv, reqs) = (server.clone(), requests.clone());
        let thread = std::thread::spawn(move || {
            for mut rq in srv.incoming_requests() {
                let (handler, reqs) = (handler.clone(), reqs.clone());
                std::thread::spawn(move || {
                    let mut raw = Vec::new();
                    let _ = rq.as_reader().read_to_end(&mut raw);
                    let headers: Vec<(String, String)> = rq
                        .headers()
                        .iter()
                        .map(|h| {
                            (
                                h.field.as_str().as_str().to_ascii_lowercase(),
                                h.value.as_str().to_string(),
                            )
                        })
                        .collect();
                    let gzip = headers
                        .iter()
                        .any(|(k, v)| k == "content-encoding" && v.eq_ignore_ascii_case("gzip"));
                    let body = if gzip {
                        let mut out = Vec::new();
                        match flate2::read::GzDecoder::new(&raw[..]).read_to_end(&mut out) {
                            Ok(_) => out,
                            Err(_) => raw,
                        }
                    } else {
                        raw
                    };
                    let req = StubRequest {
                        method: rq.method().as_str().to_string(),
                        url: rq.url().to_string(),
                        headers,
                        body,
                        gzip,
                    };
                    reqs.lock().unwrap().push(req.clone());
                    let resp = handler(&req);
                    let mut out = tiny_http::Response::from_data(resp.body)
                        .with_status_code(tiny_http::StatusCode(resp.status));
                    for (k, v) in resp.headers {
                        if let Ok(h) = tiny_http::Header::from_bytes(k.as_bytes(), v.as_bytes()) {
                            out.add_header(h);
                        }
                    }
                    let _ = rq.respond(out);
                });
            }
        });
        Ok(StubServer {
            server,
            port,
            requests,
            thread: Some(thread),
        })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Every request seen so far, in arrival order.
    pub fn requests(&self) -> Vec<StubRequest> {
        self.requests.lock().unwrap().clone()
    }
}

impl Drop for StubServer {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
