//! A minimal S3 client (path-style, AWS Signature Version 4 over `sha2`) for the GreptimeDB
//! emulator's object storage and for tests that set up or inspect a real S3 server
//! (versitygw). Its own small signer rather than tsbsctl's `s3` module: the testbed does not
//! depend on the crate it tests, and an independent signer checks tsbsctl's against the same
//! server.

use sha2::{Digest, Sha256};

/// Where and as whom.
#[derive(Clone)]
pub struct Client {
    /// `http://127.0.0.1:7070` (no trailing slash).
    pub endpoint: String,
    pub region: String,
    access_key: String,
    secret_key: String,
    agent: ureq::Agent,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the keys.
        write!(f, "s3::Client {{ {} {} }}", self.endpoint, self.region)
    }
}

/// An S3 answer that was not a success: the HTTP status and the error `<Code>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Error {
    pub status: u16,
    pub code: String,
}

impl std::fmt::Display for S3Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.status == 0 {
            write!(f, "{}", self.code)
        } else {
            write!(f, "HTTP {} {}", self.status, self.code)
        }
    }
}

fn hmac(key: &[u8], msg: &[u8]) -> [u8; 32] {
    let mut k = [0u8; 64];
    if key.len() > 64 {
        k[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        k[..key.len()].copy_from_slice(key);
    }
    let mut i = Sha256::new();
    i.update(k.map(|b| b ^ 0x36));
    i.update(msg);
    let mut o = Sha256::new();
    o.update(k.map(|b| b ^ 0x5c));
    o.update(i.finalize());
    o.finalize().into()
}

fn enc(s: &str, keep_slash: bool) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) || (keep_slash && b == b'/') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn xml_all(body: &str, tag: &str) -> Vec<String> {
    let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
    let mut out = Vec::new();
    let mut rest = body;
    while let Some(i) = rest.find(&open) {
        rest = &rest[i + open.len()..];
        let Some(j) = rest.find(&close) else { break };
        out.push(
            rest[..j]
                .replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&quot;", "\"")
                .replace("&apos;", "'")
                .replace("&amp;", "&"),
        );
        rest = &rest[j + close.len()..];
    }
    out
}

impl Client {
    pub fn new(endpoint: &str, region: &str, access_key: &str, secret_key: &str) -> Client {
        Client {
            endpoint: endpoint.trim_end_matches('/').to_string(),
            region: region.to_string(),
            access_key: access_key.to_string(),
            secret_key: secret_key.to_string(),
            agent: ureq::AgentBuilder::new()
                .timeout_connect(std::time::Duration::from_secs(5))
                .timeout(std::time::Duration::from_secs(60))
                .build(),
        }
    }

    /// One signed request; `path` is `/bucket[/key]` unencoded, `query` decoded pairs.
    fn call(
        &self,
        method: &str,
        path: &str,
        query: &[(&str, &str)],
        body: &[u8],
    ) -> Result<(u16, Vec<u8>), S3Error> {
        let now = time::OffsetDateTime::now_utc();
        let f = time::macros::format_description!("[year][month][day]T[hour][minute][second]Z");
        let amz_date = now.format(&f).unwrap_or_default();
        let date = &amz_date[..8];
        let host = self
            .endpoint
            .split_once("://")
            .map_or(self.endpoint.as_str(), |(_, h)| h)
            .to_string();
        let cpath = enc(path, true);
        let mut q: Vec<(String, String)> = query
            .iter()
            .map(|(k, v)| (enc(k, false), enc(v, false)))
            .collect();
        q.sort();
        let cquery = q
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("&");
        let payload = hex::encode(Sha256::digest(body));
        let signed = "host;x-amz-content-sha256;x-amz-date";
        let creq = format!(
            "{method}\n{cpath}\n{cquery}\nhost:{host}\nx-amz-content-sha256:{payload}\nx-amz-date:{amz_date}\n\n{signed}\n{payload}"
        );
        let scope = format!("{date}/{}/s3/aws4_request", self.region);
        let sts = format!(
            "AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{}",
            hex::encode(Sha256::digest(creq.as_bytes()))
        );
        let mut k = hmac(
            format!("AWS4{}", self.secret_key).as_bytes(),
            date.as_bytes(),
        );
        for part in [self.region.as_bytes(), b"s3", b"aws4_request"] {
            k = hmac(&k, part);
        }
        let sig = hex::encode(hmac(&k, sts.as_bytes()));
        let auth = format!(
            "AWS4-HMAC-SHA256 Credential={}/{scope}, SignedHeaders={signed}, Signature={sig}",
            self.access_key
        );
        let url = if cquery.is_empty() {
            format!("{}{cpath}", self.endpoint)
        } else {
            format!("{}{cpath}?{cquery}", self.endpoint)
        };
        let req = self
            .agent
            .request(method, &url)
            .set("x-amz-date", &amz_date)
            .set("x-amz-content-sha256", &payload)
            .set("authorization", &auth);
        let resp = match req.send_bytes(body) {
            Ok(r) => r,
            Err(ureq::Error::Status(_, r)) => r,
            Err(ureq::Error::Transport(t)) => {
                return Err(S3Error {
                    status: 0,
                    code: format!("{} did not answer: {t}", self.endpoint),
                })
            }
        };
        let status = resp.status();
        let mut bytes = Vec::new();
        use std::io::Read;
        resp.into_reader()
            .take(1 << 30)
            .read_to_end(&mut bytes)
            .map_err(|e| S3Error {
                status,
                code: format!("reading the answer: {e}"),
            })?;
        if (200..300).contains(&status) {
            Ok((status, bytes))
        } else {
            let text = String::from_utf8_lossy(&bytes);
            let code = xml_all(&text, "Code")
                .into_iter()
                .next()
                .unwrap_or_else(|| "no error code".into());
            Err(S3Error { status, code })
        }
    }

    pub fn create_bucket(&self, bucket: &str) -> Result<(), S3Error> {
        self.call("PUT", &format!("/{bucket}"), &[], b"")
            .map(|_| ())
    }

    pub fn put(&self, bucket: &str, key: &str, body: &[u8]) -> Result<(), S3Error> {
        self.call("PUT", &format!("/{bucket}/{key}"), &[], body)
            .map(|_| ())
    }

    pub fn get(&self, bucket: &str, key: &str) -> Result<Vec<u8>, S3Error> {
        self.call("GET", &format!("/{bucket}/{key}"), &[], b"")
            .map(|(_, b)| b)
    }

    /// Deleting a missing key succeeds (S3 semantics).
    pub fn delete(&self, bucket: &str, key: &str) -> Result<(), S3Error> {
        self.call("DELETE", &format!("/{bucket}/{key}"), &[], b"")
            .map(|_| ())
    }

    /// Every object under `prefix`: (key, size), ListObjectsV2 pages of 1000 (at most 10,000
    /// pages: a server that never ends a listing cannot hang a test).
    pub fn list(&self, bucket: &str, prefix: &str) -> Result<Vec<(String, u64)>, S3Error> {
        let mut out = Vec::new();
        let mut token: Option<String> = None;
        for _ in 0..10_000 {
            let mut q = vec![("list-type", "2"), ("prefix", prefix), ("max-keys", "1000")];
            if let Some(t) = &token {
                q.push(("continuation-token", t));
            }
            let (_, body) = self.call("GET", &format!("/{bucket}"), &q, b"")?;
            let text = String::from_utf8_lossy(&body).into_owned();
            for c in xml_all(&text, "Contents") {
                let key = xml_all(&c, "Key").pop().unwrap_or_default();
                let size = xml_all(&c, "Size")
                    .pop()
                    .and_then(|s| s.trim().parse().ok())
                    .unwrap_or(0);
                out.push((key, size));
            }
            let truncated = xml_all(&text, "IsTruncated")
                .pop()
                .is_some_and(|t| t.trim() == "true");
            match xml_all(&text, "NextContinuationToken").pop() {
                Some(t) if truncated && !t.is_empty() => token = Some(t),
                _ => return Ok(out),
            }
        }
        Err(S3Error {
            status: 0,
            code: "the listing did not end".into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_and_encoding() {
        assert_eq!(
            hex::encode(hmac(b"Jefe", b"what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        assert_eq!(enc("a b/c~", true), "a%20b/c~");
        assert_eq!(enc("a/b=", false), "a%2Fb%3D");
        assert_eq!(
            xml_all("<Error><Code>NoSuchBucket</Code></Error>", "Code"),
            vec!["NoSuchBucket"]
        );
    }
}
