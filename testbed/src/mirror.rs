//! A release mirror on 127.0.0.1 for tests: one HTTP/1.1 server that serves every stand-in
//! host under a path prefix ([`GITHUB`], [`GITHUB_API`], ...), honours `Range: bytes=N-`
//! (206 with `Content-Range`, 416 past the end), streams file bodies from disk, records every
//! request, and misbehaves on request ([`Fault`]).
//!
//! Hand-rolled on `std::net::TcpListener` (a thread per connection, keep-alive) so that the
//! faults are exact: a body cut after N bytes really closes the socket mid-body.

use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// `https://github.com` (release downloads).
pub const GITHUB: &str = "/github.com";
/// `https://api.github.com`.
pub const GITHUB_API: &str = "/api.github.com";
/// `https://dl.influxdata.com`.
pub const INFLUXDATA_DL: &str = "/dl.influxdata.com";
/// The InfluxDB 3 installer script (a full URL, not a base).
pub const INSTALLER: &str = "/www.influxdata.com/d/install_influxdb3.sh";
/// `https://go.dev/dl`.
pub const GO_DL: &str = "/go.dev/dl";

/// How long an idle keep-alive connection is kept open.
const IDLE: Duration = Duration::from_secs(30);
const MAX_HEAD: usize = 64 << 10;

/// What the mirror serves at a path.
#[derive(Debug, Clone)]
pub enum Body {
    Bytes(Vec<u8>),
    /// Streamed from disk on every request (for huge files); the file must stay in place.
    File(PathBuf),
}

/// A way to misbehave. Status faults (`NotFound`, `RateLimited`, `Status`, `Drop`) replace the
/// response; the others change how the body is sent and combine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// 404, even if something is published there.
    NotFound,
    /// GitHub's 403 for an exhausted API rate limit (`x-ratelimit-remaining: 0` and its JSON).
    RateLimited,
    /// This status with a short text body.
    Status(u16),
    /// Sends the headers (full `Content-Length`) and N body bytes, then closes the connection.
    CutAfter(u64),
    /// Sends the body at about this rate.
    Slow { bytes_per_sec: u64 },
    /// Answers 200 with the whole body to a Range request.
    IgnoreRange,
    /// Closes the connection without answering.
    Drop,
}

/// One request the mirror saw.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub query: Option<String>,
    /// Header names in lower case, in the order received.
    pub headers: Vec<(String, String)>,
}

impl Request {
    /// The first value of a header (name matched case-insensitively).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }

    /// `path?query` as it was requested.
    pub fn target(&self) -> String {
        match &self.query {
            Some(q) => format!("{}?{q}", self.path),
            None => self.path.clone(),
        }
    }
}

struct Entry {
    body: Body,
    content_type: String,
}

#[derive(Default)]
struct State {
    entries: HashMap<String, Arc<Entry>>,
    redirects: HashMap<String, (u16, String)>,
    faults: HashMap<String, Vec<Fault>>,
    once: HashMap<String, VecDeque<Fault>>,
    requests: Vec<Request>,
    /// Open connections by id, so that drop can shut them down.
    conns: HashMap<u64, TcpStream>,
    next_conn: u64,
}

/// The mirror; stopped (listener closed, open connections shut down) on drop.
pub struct Mirror {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

impl Mirror {
    /// Starts on 127.0.0.1 with a port the OS picks.
    pub fn start() -> std::io::Result<Mirror> {
        Self::start_on(0)
    }

    /// Starts on 127.0.0.1:`port` (0: the OS picks).
    pub fn start_on(port: u16) -> std::io::Result<Mirror> {
        let listener = TcpListener::bind(("127.0.0.1", port))?;
        let addr = listener.local_addr()?;
        let state = Arc::new(Mutex::new(State::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let accept = {
            let state = Arc::clone(&state);
            let stop = Arc::clone(&stop);
            std::thread::Builder::new()
                .name("mirror-accept".into())
                .spawn(move || accept_loop(listener, state, stop))?
        };
        Ok(Mirror {
            addr,
            state,
            stop,
            accept: Some(accept),
        })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `base_url() + path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url())
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Publishes `body` at `path` (which may carry a query) as `application/octet-stream`.
    pub fn put(&self, path: &str, body: Body) {
        self.put_typed(path, body, "application/octet-stream");
    }

    /// Publishes `body` with an explicit content type.
    pub fn put_typed(&self, path: &str, body: Body, content_type: &str) {
        assert!(path.starts_with('/'), "mirror paths start with '/': {path}");
        self.lock().entries.insert(
            path.to_string(),
            Arc::new(Entry {
                body,
                content_type: content_type.to_string(),
            }),
        );
    }

    pub fn put_bytes(&self, path: &str, bytes: Vec<u8>) {
        self.put(path, Body::Bytes(bytes));
    }

    /// Publishes text as `text/plain; charset=utf-8`.
    pub fn put_text(&self, path: &str, text: &str) {
        self.put_typed(
            path,
            Body::Bytes(text.as_bytes().to_vec()),
            "text/plain; charset=utf-8",
        );
    }

    pub fn put_json(&self, path: &str, value: &serde_json::Value) {
        let bytes = serde_json::to_vec_pretty(value).expect("serialize JSON");
        self.put_typed(path, Body::Bytes(bytes), "application/json; charset=utf-8");
    }

    /// Answers requests to `path` with `302 Found` and `Location: location` (a full URL or
    /// a path on this mirror), like GitHub sending release assets to its object store.
    pub fn redirect(&self, path: &str, location: &str) {
        self.redirect_with(path, 302, location);
    }

    /// As [`Mirror::redirect`], with another 3xx status (301, 303, 307, 308).
    pub fn redirect_with(&self, path: &str, status: u16, location: &str) {
        assert!(path.starts_with('/'), "mirror paths start with '/': {path}");
        self.lock()
            .redirects
            .insert(path.to_string(), (status, location.to_string()));
    }

    pub fn remove(&self, path: &str) {
        let mut st = self.lock();
        st.entries.remove(path);
        st.redirects.remove(path);
    }

    /// The paths published so far, sorted.
    pub fn paths(&self) -> Vec<String> {
        let mut v: Vec<String> = self.lock().entries.keys().cloned().collect();
        v.sort();
        v
    }

    /// A fault for every request to `path` (with or without a query) until cleared.
    pub fn fault(&self, path: &str, fault: Fault) {
        let mut st = self.lock();
        let list = st.faults.entry(path.to_string()).or_default();
        if !list.contains(&fault) {
            list.push(fault);
        }
    }

    /// A fault for the next request to `path` only (queued: several calls hit several
    /// requests in turn).
    pub fn fault_once(&self, path: &str, fault: Fault) {
        self.lock()
            .once
            .entry(path.to_string())
            .or_default()
            .push_back(fault);
    }

    pub fn clear_faults(&self) {
        let mut st = self.lock();
        st.faults.clear();
        st.once.clear();
    }

    /// Every request seen, in order.
    pub fn requests(&self) -> Vec<Request> {
        self.lock().requests.clone()
    }

    /// The requests whose path (without query) is `path`.
    pub fn requests_for(&self, path: &str) -> Vec<Request> {
        self.lock()
            .requests
            .iter()
            .filter(|r| r.path == path)
            .cloned()
            .collect()
    }

    /// The `TSBSCTL_*` variables that point tsbsctl at this mirror.
    pub fn env(&self) -> Vec<(String, String)> {
        let b = self.base_url();
        [
            ("TSBSCTL_GITHUB_URL", GITHUB),
            ("TSBSCTL_GITHUB_API_URL", GITHUB_API),
            ("TSBSCTL_INFLUXDATA_DL_URL", INFLUXDATA_DL),
            ("TSBSCTL_INFLUXDB3_INSTALLER_URL", INSTALLER),
            ("TSBSCTL_GO_DL_URL", GO_DL),
        ]
        .into_iter()
        .map(|(k, p)| (k.to_string(), format!("{b}{p}")))
        .collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for Mirror {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the blocking accept.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
        for (_, c) in self.lock().conns.drain() {
            let _ = c.shutdown(Shutdown::Both);
        }
    }
}

fn accept_loop(listener: TcpListener, state: Arc<Mutex<State>>, stop: Arc<AtomicBool>) {
    for conn in listener.incoming() {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let Ok(stream) = conn else {
            // E.g. out of file descriptors: do not spin.
            std::thread::sleep(Duration::from_millis(10));
            continue;
        };
        let id = {
            let mut st = state.lock().unwrap_or_else(|e| e.into_inner());
            st.next_conn += 1;
            let id = st.next_conn;
            if let Ok(c) = stream.try_clone() {
                st.conns.insert(id, c);
            }
            id
        };
        let state = Arc::clone(&state);
        let _ = std::thread::Builder::new()
            .name("mirror-conn".into())
            .spawn(move || {
                let _ = serve_connection(stream, &state);
                let mut st = state.lock().unwrap_or_else(|e| e.into_inner());
                st.conns.remove(&id);
            });
    }
}

struct Head {
    method: String,
    target: String,
    keep_alive: bool,
    headers: Vec<(String, String)>,
}

/// Reads one request head; `Ok(None)` when the client closed the connection cleanly.
fn read_head(r: &mut BufReader<TcpStream>) -> std::io::Result<Option<Head>> {
    let mut line = String::new();
    let mut total = 0;
    // Skip stray empty lines between requests (RFC 9112 §2.2).
    loop {
        line.clear();
        let n = r.read_line(&mut line)?;
        if n == 0 {
            return Ok(None);
        }
        total += n;
        if !line.trim().is_empty() {
            break;
        }
        if total > MAX_HEAD {
            return Err(std::io::Error::other("request head too large"));
        }
    }
    let mut parts = line.split_whitespace();
    let (Some(method), Some(target), Some(version)) = (parts.next(), parts.next(), parts.next())
    else {
        return Err(std::io::Error::other("bad request line"));
    };
    let (method, target, version) = (method.to_string(), target.to_string(), version.to_string());
    let mut headers = Vec::new();
    loop {
        line.clear();
        let n = r.read_line(&mut line)?;
        total += n;
        if n == 0 || total > MAX_HEAD {
            return Err(std::io::Error::other("truncated request head"));
        }
        let l = line.trim_end_matches(['\r', '\n']);
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    let conn = headers
        .iter()
        .find(|(k, _)| k == "connection")
        .map(|(_, v)| v.to_ascii_lowercase());
    let keep_alive = match conn.as_deref() {
        Some(c) if c.contains("close") => false,
        Some(c) if c.contains("keep-alive") => true,
        _ => version == "HTTP/1.1",
    };
    Ok(Some(Head {
        method,
        target,
        keep_alive,
        headers,
    }))
}

fn serve_connection(stream: TcpStream, state: &Mutex<State>) -> std::io::Result<()> {
    stream.set_read_timeout(Some(IDLE))?;
    let _ = stream.set_nodelay(true);
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut out = stream;
    while let Some(head) = read_head(&mut reader)? {
        // Requests to a mirror carry no body we care about; drain one if sent.
        if let Some(len) = head
            .headers
            .iter()
            .find(|(k, _)| k == "content-length")
            .and_then(|(_, v)| v.parse::<u64>().ok())
        {
            std::io::copy(&mut (&mut reader).take(len), &mut std::io::sink())?;
        }
        let (path, query) = match head.target.split_once('?') {
            Some((p, q)) => (p.to_string(), Some(q.to_string())),
            None => (head.target.clone(), None),
        };
        let (entry, redirect, faults) = {
            let mut st = state.lock().unwrap_or_else(|e| e.into_inner());
            st.requests.push(Request {
                method: head.method.clone(),
                path: path.clone(),
                query: query.clone(),
                headers: head.headers.clone(),
            });
            let entry = st
                .entries
                .get(&head.target)
                .or_else(|| st.entries.get(&path))
                .cloned();
            let redirect = st
                .redirects
                .get(&head.target)
                .or_else(|| st.redirects.get(&path))
                .cloned();
            let mut faults = Vec::new();
            for key in [&head.target, &path] {
                if let Some(list) = st.faults.get(key) {
                    faults.extend(list.iter().cloned());
                }
            }
            for key in [&head.target, &path] {
                if let Some(q) = st.once.get_mut(key) {
                    if let Some(f) = q.pop_front() {
                        faults.push(f);
                        break;
                    }
                }
            }
            (entry, redirect, faults)
        };
        let keep = match redirect {
            Some((status, location))
                if !faults.iter().any(|f| {
                    matches!(
                        f,
                        Fault::Drop | Fault::NotFound | Fault::RateLimited | Fault::Status(_)
                    )
                }) =>
            {
                let extra = format!("Location: {location}\r\n");
                simple(
                    &mut out,
                    status,
                    "text/html",
                    &extra,
                    b"",
                    head.method == "HEAD",
                )?
            }
            _ => respond(&mut out, &head, &path, entry.as_deref(), &faults)?,
        };
        if !(keep && head.keep_alive) {
            let _ = out.flush();
            let _ = out.shutdown(Shutdown::Both);
            return Ok(());
        }
    }
    Ok(())
}

/// Writes the response; returns false when the connection must close.
fn respond(
    out: &mut TcpStream,
    head: &Head,
    path: &str,
    entry: Option<&Entry>,
    faults: &[Fault],
) -> std::io::Result<bool> {
    let is_head = head.method == "HEAD";
    for f in faults {
        match f {
            Fault::Drop => return Ok(false),
            Fault::NotFound => return not_found(out, path, is_head),
            Fault::RateLimited => {
                let reset = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_secs() + 3600)
                    .unwrap_or(0);
                let body = serde_json::json!({
                    "message": "API rate limit exceeded for 127.0.0.1. (But here's the good news: Authenticated requests get a higher rate limit. Check out the documentation for more details.)",
                    "documentation_url": "https://docs.github.com/rest/overview/resources-in-the-rest-api#rate-limiting"
                })
                .to_string();
                let extra = format!(
                    "x-ratelimit-limit: 60\r\nx-ratelimit-remaining: 0\r\nx-ratelimit-reset: {reset}\r\nx-ratelimit-used: 60\r\nx-ratelimit-resource: core\r\n"
                );
                return simple(
                    out,
                    403,
                    "application/json; charset=utf-8",
                    &extra,
                    body.as_bytes(),
                    is_head,
                );
            }
            Fault::Status(code) => {
                let body = format!("{code} {}\n", reason(*code));
                return simple(out, *code, "text/plain", "", body.as_bytes(), is_head);
            }
            _ => {}
        }
    }
    if head.method != "GET" && !is_head {
        return simple(
            out,
            405,
            "text/plain",
            "Allow: GET, HEAD\r\n",
            b"method not allowed\n",
            false,
        );
    }
    let Some(entry) = entry else {
        return not_found(out, path, is_head);
    };
    let size = match &entry.body {
        Body::Bytes(b) => b.len() as u64,
        Body::File(p) => match std::fs::metadata(p) {
            Ok(m) => m.len(),
            Err(_) => return not_found(out, path, is_head),
        },
    };
    let ignore_range = faults.contains(&Fault::IgnoreRange);
    let range = if ignore_range {
        None
    } else {
        head.headers
            .iter()
            .find(|(k, _)| k == "range")
            .and_then(|(_, v)| parse_range(v))
    };
    let (status, start, end) = match range {
        Some((s, _)) if s >= size => {
            let extra = format!("Content-Range: bytes */{size}\r\n");
            return simple(out, 416, "text/plain", &extra, b"", is_head);
        }
        Some((s, e)) => (206, s, e.map(|e| e.min(size - 1)).unwrap_or(size - 1) + 1),
        None => (200, 0, size),
    };
    let len = end.saturating_sub(start);
    let mut h = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: {}\r\nContent-Length: {len}\r\nAccept-Ranges: bytes\r\n",
        reason(status),
        entry.content_type
    );
    if status == 206 {
        h.push_str(&format!(
            "Content-Range: bytes {start}-{}/{size}\r\n",
            end - 1
        ));
    }
    h.push_str(if head.keep_alive {
        "Connection: keep-alive\r\n\r\n"
    } else {
        "Connection: close\r\n\r\n"
    });
    out.write_all(h.as_bytes())?;
    if is_head {
        return Ok(true);
    }
    let cut = faults.iter().find_map(|f| match f {
        Fault::CutAfter(n) => Some(*n),
        _ => None,
    });
    let slow = faults.iter().find_map(|f| match f {
        Fault::Slow { bytes_per_sec } => Some((*bytes_per_sec).max(1)),
        _ => None,
    });
    let send = cut.map_or(len, |c| c.min(len));
    match &entry.body {
        Body::Bytes(b) => {
            let part = &b[start as usize..(start + send) as usize];
            write_paced(out, &mut &part[..], send, slow)?;
        }
        Body::File(p) => {
            let mut f = std::fs::File::open(p)?;
            f.seek(SeekFrom::Start(start))?;
            if slow.is_none() {
                // std turns this into sendfile(2) on Linux: fast enough for the 1 GiB bench.
                let n = std::io::copy(&mut f.take(send), out)?;
                if n < send {
                    return Ok(false);
                }
            } else {
                write_paced(out, &mut f, send, slow)?;
            }
        }
    }
    out.flush()?;
    Ok(cut.is_none_or(|c| c >= len))
}

/// Copies `n` bytes, in tenths of a second's worth when `slow` is set.
fn write_paced(
    out: &mut TcpStream,
    src: &mut dyn Read,
    n: u64,
    slow: Option<u64>,
) -> std::io::Result<()> {
    let Some(bps) = slow else {
        std::io::copy(&mut src.take(n), out)?;
        return Ok(());
    };
    let step = (bps / 10).max(1);
    let mut left = n;
    let mut buf = vec![0u8; step.min(1 << 20) as usize];
    while left > 0 {
        let want = left.min(buf.len() as u64) as usize;
        src.read_exact(&mut buf[..want])?;
        out.write_all(&buf[..want])?;
        out.flush()?;
        left -= want as u64;
        if left > 0 {
            std::thread::sleep(Duration::from_secs_f64(want as f64 / bps as f64));
        }
    }
    Ok(())
}

fn not_found(out: &mut TcpStream, path: &str, is_head: bool) -> std::io::Result<bool> {
    if path.starts_with(GITHUB_API) {
        let body = serde_json::json!({
            "message": "Not Found",
            "documentation_url": "https://docs.github.com/rest",
            "status": "404"
        })
        .to_string();
        simple(
            out,
            404,
            "application/json; charset=utf-8",
            "",
            body.as_bytes(),
            is_head,
        )
    } else {
        simple(out, 404, "text/plain", "", b"Not Found", is_head)
    }
}

fn simple(
    out: &mut TcpStream,
    status: u16,
    content_type: &str,
    extra: &str,
    body: &[u8],
    is_head: bool,
) -> std::io::Result<bool> {
    let h = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n{extra}Connection: keep-alive\r\n\r\n",
        reason(status),
        body.len()
    );
    out.write_all(h.as_bytes())?;
    if !is_head {
        out.write_all(body)?;
    }
    out.flush()?;
    Ok(true)
}

/// `bytes=N-` or `bytes=N-M` (one range; anything else is ignored, as RFC 9110 allows).
fn parse_range(v: &str) -> Option<(u64, Option<u64>)> {
    let spec = v.trim().strip_prefix("bytes=")?;
    if spec.contains(',') {
        return None;
    }
    let (s, e) = spec.split_once('-')?;
    let start = s.trim().parse().ok()?;
    let end = match e.trim() {
        "" => None,
        e => {
            let e: u64 = e.parse().ok()?;
            if e < start {
                return None;
            }
            Some(e)
        }
    };
    Some((start, end))
}

fn reason(code: u16) -> &'static str {
    match code {
        200 => "OK",
        206 => "Partial Content",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        416 => "Range Not Satisfiable",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One raw request on a fresh connection; returns (status, headers, body) as received
    /// until the server closes (the request asks it to).
    fn get(m: &Mirror, target: &str, extra: &str) -> (u16, String, Vec<u8>) {
        let mut s = TcpStream::connect(m.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        write!(
            s,
            "GET {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{extra}\r\n"
        )
        .unwrap();
        let mut all = Vec::new();
        s.read_to_end(&mut all).unwrap();
        let split = all.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
        let head = String::from_utf8(all[..split].to_vec()).unwrap();
        let body = all[split + 4..].to_vec();
        let status = head[9..12].parse().unwrap();
        (status, head.to_ascii_lowercase(), body)
    }

    #[test]
    fn serves_ranges_and_records_requests() {
        let m = Mirror::start().unwrap();
        m.put_bytes("/a/b.bin", b"0123456789".to_vec());
        let (st, h, body) = get(&m, "/a/b.bin", "");
        assert_eq!(st, 200);
        assert!(h.contains("content-length: 10"));
        assert_eq!(body, b"0123456789");

        let (st, h, body) = get(&m, "/a/b.bin", "Range: bytes=4-\r\n");
        assert_eq!(st, 206);
        assert!(h.contains("content-range: bytes 4-9/10"), "{h}");
        assert_eq!(body, b"456789");

        let (st, _, body) = get(&m, "/a/b.bin", "Range: bytes=2-3\r\n");
        assert_eq!((st, body.as_slice()), (206, &b"23"[..]));

        let (st, h, _) = get(&m, "/a/b.bin", "Range: bytes=10-\r\n");
        assert_eq!(st, 416);
        assert!(h.contains("content-range: bytes */10"));

        let (st, _, _) = get(&m, "/missing", "");
        assert_eq!(st, 404);

        let reqs = m.requests_for("/a/b.bin");
        assert_eq!(reqs.len(), 4);
        assert_eq!(reqs[1].header("Range"), Some("bytes=4-"));
        assert_eq!(reqs[0].header("range"), None);
        assert_eq!(m.requests().len(), 5);
    }

    #[test]
    fn query_paths_and_json() {
        let m = Mirror::start().unwrap();
        m.put_json("/go.dev/dl/?mode=json&include=all", &serde_json::json!([1]));
        let (st, h, body) = get(&m, "/go.dev/dl/?mode=json&include=all", "");
        assert_eq!(st, 200);
        assert!(h.contains("application/json"));
        assert_eq!(
            serde_json::from_slice::<serde_json::Value>(&body).unwrap()[0],
            1
        );
        let (st, _, _) = get(&m, "/go.dev/dl/?mode=json", "");
        assert_eq!(st, 404);
        let r = &m.requests()[0];
        assert_eq!(r.path, "/go.dev/dl/");
        assert_eq!(r.query.as_deref(), Some("mode=json&include=all"));
    }

    #[test]
    fn faults() {
        let m = Mirror::start().unwrap();
        m.put_bytes("/f", vec![7u8; 1000]);

        m.fault_once("/f", Fault::CutAfter(100));
        let (st, h, body) = get(&m, "/f", "");
        assert_eq!(st, 200);
        assert!(h.contains("content-length: 1000"));
        assert_eq!(body.len(), 100);
        assert_eq!(get(&m, "/f", "").2.len(), 1000, "fault_once is used up");

        m.fault("/f", Fault::IgnoreRange);
        let (st, _, body) = get(&m, "/f", "Range: bytes=500-\r\n");
        assert_eq!((st, body.len()), (200, 1000));

        m.fault(
            "/api.github.com/repos/x/y/releases/latest",
            Fault::RateLimited,
        );
        let (st, h, body) = get(&m, "/api.github.com/repos/x/y/releases/latest", "");
        assert_eq!(st, 403);
        assert!(h.contains("x-ratelimit-remaining: 0"));
        assert!(String::from_utf8(body)
            .unwrap()
            .contains("rate limit exceeded"));

        m.fault("/f", Fault::Status(503));
        assert_eq!(get(&m, "/f", "").0, 503);
        m.clear_faults();
        m.fault_once("/f", Fault::NotFound);
        assert_eq!(get(&m, "/f", "").0, 404);
        assert_eq!(get(&m, "/f", "").0, 200);

        m.fault_once("/f", Fault::Drop);
        let mut s = TcpStream::connect(m.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        write!(s, "GET /f HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let mut all = Vec::new();
        let _ = s.read_to_end(&mut all);
        assert!(all.is_empty());
    }

    #[test]
    fn streams_files_and_keeps_connections_alive() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("big");
        let data: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&p, &data).unwrap();
        let m = Mirror::start().unwrap();
        m.put("/big", Body::File(p));
        let (st, _, body) = get(&m, "/big", "Range: bytes=1000-\r\n");
        assert_eq!(st, 206);
        assert_eq!(body, &data[1000..]);

        // Two requests on one connection.
        let mut s = TcpStream::connect(m.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        write!(s, "HEAD /big HTTP/1.1\r\nHost: x\r\n\r\nGET /big HTTP/1.1\r\nHost: x\r\nRange: bytes=299990-\r\nConnection: close\r\n\r\n").unwrap();
        let mut all = Vec::new();
        s.read_to_end(&mut all).unwrap();
        let text = String::from_utf8_lossy(&all);
        assert_eq!(text.matches("HTTP/1.1 ").count(), 2, "{text}");
        assert!(all.ends_with(&data[299_990..]));

        let env = m.env();
        assert!(env.contains(&(
            "TSBSCTL_GO_DL_URL".to_string(),
            format!("{}/go.dev/dl", m.base_url())
        )));
    }
}
