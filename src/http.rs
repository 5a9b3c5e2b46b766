//! Every blocking HTTP client tsbsctl builds, named by what it talks to (rustup's download
//! layer: one place decides proxies, timeouts, redirects and the user agent). Each kind below
//! is a [`Options`] value, turned into a client by [`client`], the one `Client::builder()` in
//! the tool. A blocking client starts its own runtime thread, so the long-lived kinds with one
//! configuration ([`external`], [`s3`], [`local_shared`]) are built once per process and cloned
//! (a clone shares the connection pool); the others take a timeout per call.

use std::sync::OnceLock;
use std::time::Duration;

use reqwest::blocking::{Client, RequestBuilder};
use reqwest::StatusCode;
use serde_json::Value;

use crate::error::{Error, Result};

/// How a client behaves: everything a call site may choose, resolved before it is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Honour the proxy variables (`HTTPS_PROXY`, ...): a remote server may sit behind one; a
    /// local one never does (a proxy must never route a local statement elsewhere).
    pub proxy: bool,
    pub connect_timeout: Duration,
    /// Per request (the blocking client applies it to the wait for headers and to every
    /// read); `None`: no limit.
    pub timeout: Option<Duration>,
    /// Follow redirects (reqwest's default policy, 10 hops); `false`: a 3xx is the answer.
    pub redirects: bool,
    /// Send `User-Agent: tsbsctl/<version>`.
    pub user_agent: bool,
}

/// Builds the client `o` describes, the error worded once.
pub fn client(o: &Options) -> Result<Client> {
    let mut b = Client::builder()
        .connect_timeout(o.connect_timeout)
        .timeout(o.timeout);
    if !o.proxy {
        b = b.no_proxy();
    }
    if !o.redirects {
        b = b.redirect(reqwest::redirect::Policy::none());
    }
    if o.user_agent {
        b = b.user_agent(format!("tsbsctl/{}", crate::VERSION));
    }
    b.build()
        .map_err(|e| Error::failed(format!("could not build an HTTP client: {e}")))
}

/// Builds once into `cell`, then clones.
fn shared(cell: &'static OnceLock<Client>, o: &Options) -> Result<Client> {
    if let Some(c) = cell.get() {
        return Ok(c.clone());
    }
    let c = client(o)?;
    Ok(cell.get_or_init(|| c).clone())
}

/// A server tsbsctl manages, on loopback: no proxy; `timeout` per request (`None`: a
/// maintenance statement the server answers when its work is done), 5 s to connect.
pub fn local(timeout: Option<Duration>) -> Result<Client> {
    client(&local_options(timeout))
}

fn local_options(timeout: Option<Duration>) -> Options {
    Options {
        proxy: false,
        connect_timeout: Duration::from_secs(5),
        timeout,
        redirects: true,
        user_agent: false,
    }
}

/// [`local`] with one timeout for the whole process, built once.
pub fn local_shared(cell: &'static OnceLock<Client>, timeout: Duration) -> Result<Client> {
    shared(cell, &local_options(Some(timeout)))
}

/// A server tsbsctl does not manage: proxies honoured (it may sit behind one); 10 s per
/// request, 5 s to connect; built once per process.
pub fn external() -> Result<Client> {
    static CLIENT: OnceLock<Client> = OnceLock::new();
    shared(
        &CLIENT,
        &Options {
            proxy: true,
            connect_timeout: Duration::from_secs(5),
            timeout: Some(Duration::from_secs(10)),
            redirects: true,
            user_agent: false,
        },
    )
}

/// tsbsctl's own S3 requests (a bucket's probe, listing, reads): proxies honoured (a remote
/// endpoint may need one); 60 s per request, 10 s to connect; built once per process.
pub fn s3() -> Result<Client> {
    static CLIENT: OnceLock<Client> = OnceLock::new();
    shared(
        &CLIENT,
        &Options {
            proxy: true,
            connect_timeout: Duration::from_secs(10),
            timeout: Some(Duration::from_secs(60)),
            redirects: true,
            user_agent: false,
        },
    )
}

/// Release downloads and their documents (`download::Downloader`): proxies honoured, the
/// user agent sent, no redirects (the downloader follows them itself, so a token only ever
/// goes to the GitHub API source), `timeout` to connect and as the idle-read timeout, not a
/// limit on the whole transfer. Built per downloader (the timeout is its own).
pub fn download(timeout: Duration) -> Result<Client> {
    client(&Options {
        proxy: true,
        connect_timeout: timeout,
        timeout: Some(timeout),
        redirects: false,
        user_agent: true,
    })
}

/// A server's answer to one request, read whole: what the products' own HTTP calls share
/// (InfluxDB 2's API, InfluxDB 3's counts, GreptimeDB's `/v1/sql`), with their errors worded
/// once. `server` below is the words that name the server in a message (`InfluxDB 2 at
/// http://127.0.0.1:8086`), `what` the request (`GET /api/v2/orgs`, `count(*) of cpu`).
#[derive(Debug)]
pub struct Answer {
    pub status: StatusCode,
    pub text: String,
}

/// Sends `r` and reads the answer whole. No answer is `{server} did not answer {what}: {why}`,
/// the reason redacted (no token or user-info reaches a message); with `limit`, which becomes
/// the request's timeout, a timeout says `no answer within N s`.
pub fn send(
    server: &str,
    what: &str,
    r: RequestBuilder,
    limit: Option<Duration>,
) -> Result<Answer> {
    let r = match limit {
        Some(t) => r.timeout(t),
        None => r,
    };
    let resp = r.send().map_err(|e| {
        let why = match limit {
            Some(t) if e.is_timeout() => format!("no answer within {} s", t.as_secs_f64()),
            _ => crate::redact::Redactor::new().redact(&e.to_string()),
        };
        Error::failed(format!("{server} did not answer {what}: {why}"))
    })?;
    let status = resp.status();
    let text = resp.text().unwrap_or_default();
    Ok(Answer { status, text })
}

impl Answer {
    pub fn is_success(&self) -> bool {
        self.status.is_success()
    }

    /// The body as JSON; else `{server} answered {what} with invalid JSON ({status}): {e}`.
    pub fn json(&self, server: &str, what: &str) -> Result<Value> {
        serde_json::from_str(&self.text).map_err(|e| {
            Error::failed(format!(
                "{server} answered {what} with invalid JSON ({}): {e}",
                self.status
            ))
        })
    }

    /// The server's own words: the string `key` of a JSON body (`no error message` when a
    /// JSON body has none), else the body's first 300 characters.
    pub fn said(&self, key: &str) -> String {
        match serde_json::from_str::<Value>(&self.text) {
            Ok(v) => v
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or("no error message")
                .to_string(),
            Err(_) => self.text.trim().chars().take(300).collect(),
        }
    }

    /// `{server} refused {what} ({status}): {said}`, a failure that carries the status.
    pub fn refused(&self, server: &str, what: &str, said: &str) -> Error {
        Error::failed(format!("{server} refused {what} ({}): {said}", self.status))
            .with_http_status(self.status.as_u16())
    }
}

/// A stand-in server for unit tests: answers HTTP requests on 127.0.0.1 in turn, one of
/// `answers` (status line, body) each, then stops listening; returns its endpoint.
#[cfg(test)]
pub(crate) fn answers_in_turn(answers: Vec<(&'static str, &'static str)>) -> String {
    use std::io::{Read, Write};
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let ep = format!("http://{}", l.local_addr().unwrap());
    std::thread::spawn(move || {
        for (status, body) in answers {
            let Ok((mut c, _)) = l.accept() else { return };
            let _ = c.set_read_timeout(Some(Duration::from_secs(5)));
            let mut buf = [0u8; 8192];
            let _ = c.read(&mut buf);
            let _ = write!(
                c,
                "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    ep
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(status: u16, text: &str) -> Answer {
        Answer {
            status: StatusCode::from_u16(status).unwrap(),
            text: text.into(),
        }
    }

    /// The messages the products' HTTP calls have always worded, now in one place.
    #[test]
    fn answers_are_worded_once() {
        let a = answer(500, r#"{"error":"compaction exploded"}"#);
        assert!(!a.is_success());
        assert_eq!(a.said("error"), "compaction exploded");
        assert_eq!(a.said("message"), "no error message");
        let e = a.refused("GreptimeDB", "\"ADMIN X\"", &a.said("error"));
        assert_eq!(
            e.message,
            "GreptimeDB refused \"ADMIN X\" (500 Internal Server Error): compaction exploded"
        );
        assert_eq!((e.http_status(), e.exit_code()), (Some(500), 1));
        let long = "x".repeat(400);
        assert_eq!(
            answer(502, &format!(" {long} ")).said("error"),
            "x".repeat(300)
        );
        let e = answer(200, "not json")
            .json("InfluxDB 3", "count(*) of cpu")
            .unwrap_err();
        assert!(
            e.message
                .starts_with("InfluxDB 3 answered count(*) of cpu with invalid JSON (200 OK): "),
            "{}",
            e.message
        );
        assert_eq!(
            answer(200, r#"[{"n":3}]"#).json("s", "w").unwrap()[0]["n"],
            3
        );
    }

    /// A request that gets no answer names the server and the request; a timeout says the limit.
    #[test]
    fn no_answer_names_the_server_and_a_timeout_its_limit() {
        // A listener that accepts and never answers: the request times out.
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/x", l.local_addr().unwrap());
        let c = local(None).unwrap();
        let e = send(
            "S at here",
            "GET /x",
            c.get(&url),
            Some(Duration::from_millis(200)),
        )
        .unwrap_err();
        assert_eq!(
            e.message,
            "S at here did not answer GET /x: no answer within 0.2 s"
        );
        drop(l);
        // Nothing listening: refused, the reason given.
        let e = send("S at here", "GET /x", c.get(&url), None).unwrap_err();
        assert!(
            e.message.starts_with("S at here did not answer GET /x: "),
            "{}",
            e.message
        );
    }

    #[test]
    fn shared_clients_are_built_once() {
        static CELL: OnceLock<Client> = OnceLock::new();
        local_shared(&CELL, Duration::from_secs(3)).unwrap();
        assert!(CELL.get().is_some());
        // A second call reuses the first client, whatever it asks.
        local_shared(&CELL, Duration::from_secs(9)).unwrap();
        assert!(local(None).is_ok() && external().is_ok());
        // The process-wide kinds hand out clones of one client.
        assert!(s3().is_ok() && s3().is_ok());
    }

    /// A download client answers a redirect with the 3xx itself (the downloader follows it),
    /// and sends the user agent; a local client follows it.
    #[test]
    fn download_clients_do_not_follow_redirects_and_name_themselves() {
        use std::io::{BufRead, BufReader, Write};
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", l.local_addr().unwrap());
        let server = std::thread::spawn(move || {
            let mut agents = Vec::new();
            // Three requests: the download client's, then the local client's two (the
            // redirect and its target).
            for _ in 0..3 {
                let (mut s, _) = l.accept().unwrap();
                let mut r = BufReader::new(s.try_clone().unwrap());
                let mut path = String::new();
                let mut agent = String::new();
                let mut line = String::new();
                r.read_line(&mut path).unwrap();
                loop {
                    line.clear();
                    if r.read_line(&mut line).unwrap() == 0 || line == "\r\n" {
                        break;
                    }
                    if let Some(v) = line.to_ascii_lowercase().strip_prefix("user-agent:") {
                        agent = v.trim().to_string();
                    }
                }
                agents.push(agent);
                let answer = if path.starts_with("GET /from ") {
                    "HTTP/1.1 302 Found\r\nLocation: /to\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                } else {
                    "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
                };
                s.write_all(answer.as_bytes()).unwrap();
            }
            agents
        });
        let from = format!("{base}/from");
        let d = download(Duration::from_secs(10)).unwrap();
        assert_eq!(d.get(&from).send().unwrap().status().as_u16(), 302);
        let l = local(Some(Duration::from_secs(10))).unwrap();
        assert_eq!(l.get(&from).send().unwrap().status().as_u16(), 200);
        let agents = server.join().unwrap();
        assert_eq!(agents[0], format!("tsbsctl/{}", crate::VERSION));
        assert!(!agents[1].starts_with("tsbsctl"), "{agents:?}");
    }
}
