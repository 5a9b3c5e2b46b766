//! Every blocking HTTP client tsbsctl builds, named by what it talks to (rustup's download
//! layer: one place decides proxies and timeouts). A blocking client starts its own runtime
//! thread, so the long-lived ones are built once per process and cloned (a clone shares the
//! connection pool). The release downloads keep their own client (`download::client`: user
//! agent, no redirects, idle timeout), built through [`build`] too.

use std::sync::OnceLock;
use std::time::Duration;

use reqwest::blocking::{Client, ClientBuilder, RequestBuilder};
use reqwest::StatusCode;
use serde_json::Value;

use crate::error::{Error, Result};

/// Builds a client, the error worded once.
pub fn build(b: ClientBuilder) -> Result<Client> {
    b.build()
        .map_err(|e| Error::failed(format!("could not build an HTTP client: {e}")))
}

/// A server tsbsctl manages, on loopback: no proxy (a proxy variable must never route a
/// local statement elsewhere); `timeout` per request (`None`: a maintenance statement the
/// server answers when its work is done), 5 s to connect.
pub fn local(timeout: Option<Duration>) -> Result<Client> {
    build(
        Client::builder()
            .no_proxy()
            .connect_timeout(Duration::from_secs(5))
            .timeout(timeout),
    )
}

/// [`local`] with one timeout for the whole process, built once.
pub fn local_shared(cell: &'static OnceLock<Client>, timeout: Duration) -> Result<Client> {
    if let Some(c) = cell.get() {
        return Ok(c.clone());
    }
    let c = local(Some(timeout))?;
    Ok(cell.get_or_init(|| c).clone())
}

/// A server tsbsctl does not manage: proxies honoured (it may sit behind one); `timeout` per
/// request, 5 s to connect; built once per process.
pub fn external() -> Result<Client> {
    static CLIENT: OnceLock<Client> = OnceLock::new();
    if let Some(c) = CLIENT.get() {
        return Ok(c.clone());
    }
    let c = build(
        Client::builder()
            .timeout(Duration::from_secs(10))
            .connect_timeout(Duration::from_secs(5)),
    )?;
    Ok(CLIENT.get_or_init(|| c).clone())
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
    }
}
