//! A small S3 client for what tsbsctl needs of an object store: probe a bucket before a server
//! is started on it, and list a bucket/prefix with sizes for the storage footprint. Requests
//! are signed with AWS Signature Version 4 (hand-written over `sha2`: an SDK would pull in far
//! more than two requests need), path-style (`<endpoint>/<bucket>`), as GreptimeDB's object
//! store (OpenDAL) sends them by default.
//!
//! Credentials come only from named environment variables; [`Credentials`] never prints its
//! values, and only the variable names are meant to be recorded.

use std::collections::BTreeMap;
use std::fmt;

use reqwest::blocking::Client;
use sha2::{Digest, Sha256};
use url::Url;

use crate::error::{Error, ErrorKind, Result};

/// The SHA-256 of an empty payload (every request here has none).
const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/// Where the objects live. `prefix` is GreptimeDB's `root`: no leading or trailing slash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub endpoint: Url,
    pub bucket: String,
    pub prefix: String,
    pub region: String,
}

impl Target {
    /// Checks the user's values: an http(s) endpoint without path, query or credentials, a
    /// bucket name S3 accepts, a prefix of plain key segments.
    pub fn new(endpoint: &str, bucket: &str, prefix: &str, region: &str) -> Result<Self> {
        let bad = |m: String| Error::new(ErrorKind::Invalid, m);
        let url = Url::parse(endpoint)
            .map_err(|e| bad(format!("--s3-endpoint '{endpoint}' is not a URL: {e}")))?;
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
            return Err(bad(format!(
                "--s3-endpoint '{endpoint}' must be an http:// or https:// URL with a host"
            )));
        }
        if !url.username().is_empty() || url.password().is_some() {
            // A credential in the URL would end up in the manifest and the server's config.
            return Err(bad(
                "--s3-endpoint must not carry credentials; name environment variables with --s3-access-key-env and --s3-secret-key-env".into(),
            ));
        }
        if url.path() != "/" || url.query().is_some() || url.fragment().is_some() {
            return Err(bad(format!(
                "--s3-endpoint '{endpoint}' must have no path or query (the bucket goes in --s3-bucket)"
            )));
        }
        let bucket_ok = (3..=63).contains(&bucket.len())
            && bucket
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
            && !bucket.starts_with(['-', '.'])
            && !bucket.ends_with(['-', '.']);
        if !bucket_ok {
            return Err(bad(format!(
                "--s3-bucket '{bucket}' is not a valid bucket name (3-63 of a-z, 0-9, '-', '.')"
            )));
        }
        let prefix = prefix.trim_matches('/');
        if prefix
            .split('/')
            .any(|s| s == "." || s == ".." || (s.is_empty() && !prefix.is_empty()))
            || prefix.chars().any(|c| c.is_control())
        {
            return Err(bad(format!(
                "--s3-prefix '{prefix}' must be plain key segments separated by '/'"
            )));
        }
        if region.is_empty()
            || !region
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        {
            return Err(bad(format!("--s3-region '{region}' is not a region name")));
        }
        Ok(Target {
            endpoint: url,
            bucket: bucket.to_string(),
            prefix: prefix.to_string(),
            region: region.to_string(),
        })
    }

    fn bucket_url(&self) -> Url {
        let mut u = self.endpoint.clone();
        u.set_path(&format!("/{}", self.bucket));
        u
    }
}

/// An access key pair read from the environment. Debug and Display show the variable names only.
#[derive(Clone)]
pub struct Credentials {
    pub access_key_env: String,
    pub secret_key_env: String,
    access_key: String,
    secret_key: String,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Credentials {{ from ${} and ${} }}",
            self.access_key_env, self.secret_key_env
        )
    }
}

impl Credentials {
    /// Reads both variables; a missing or empty one is bad input naming the variable only.
    pub fn from_env(access_key_env: &str, secret_key_env: &str) -> Result<Self> {
        let get = |flag: &str, var: &str| -> Result<String> {
            if var.is_empty() || var.contains('=') || var.contains('\0') {
                return Err(Error::new(
                    ErrorKind::Invalid,
                    format!("{flag} '{var}' is not an environment variable name"),
                ));
            }
            match std::env::var(var) {
                Ok(v) if !v.is_empty() => Ok(v),
                _ => Err(Error::new(
                    ErrorKind::Invalid,
                    format!(
                        "{flag} names ${var}, which is not set (or empty) in tsbsctl's environment"
                    ),
                )),
            }
        };
        Ok(Credentials {
            access_key: get("--s3-access-key-env", access_key_env)?,
            secret_key: get("--s3-secret-key-env", secret_key_env)?,
            access_key_env: access_key_env.to_string(),
            secret_key_env: secret_key_env.to_string(),
        })
    }

    /// For tests and callers that already hold the values (never recorded).
    pub fn new(access_key: &str, secret_key: &str) -> Self {
        Credentials {
            access_key_env: String::new(),
            secret_key_env: String::new(),
            access_key: access_key.to_string(),
            secret_key: secret_key.to_string(),
        }
    }

    /// The values, for the environment of a child process only (GreptimeDB reads
    /// `GREPTIMEDB_STANDALONE__STORAGE__ACCESS_KEY_ID` and `..._SECRET_ACCESS_KEY`).
    pub fn values(&self) -> (&str, &str) {
        (&self.access_key, &self.secret_key)
    }
}

/// HMAC-SHA256 (RFC 2104) over `sha2`.
fn hmac_sha256(key: &[u8], msg: &[u8]) -> [u8; 32] {
    const BLOCK: usize = 64;
    let mut k = [0u8; BLOCK];
    if key.len() > BLOCK {
        k[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        k[..key.len()].copy_from_slice(key);
    }
    let mut inner = Sha256::new();
    inner.update(k.iter().map(|b| b ^ 0x36).collect::<Vec<u8>>());
    inner.update(msg);
    let ih = inner.finalize();
    let mut outer = Sha256::new();
    outer.update(k.iter().map(|b| b ^ 0x5c).collect::<Vec<u8>>());
    outer.update(ih);
    outer.finalize().into()
}

/// SigV4's URI encoding: everything but unreserved characters, `/` kept in paths.
fn uri_encode(s: &str, keep_slash: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        let unreserved = b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~');
        if unreserved || (keep_slash && b == b'/') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The headers to send for a signed request with no body: `Authorization`, `x-amz-date`,
/// `x-amz-content-sha256` (`host` is sent by the client from the URL). `amz_date` is
/// `YYYYMMDDTHHMMSSZ`; `query` is the decoded (name, value) pairs of the request.
pub fn sign(
    method: &str,
    url: &Url,
    query: &[(&str, &str)],
    creds: &Credentials,
    region: &str,
    amz_date: &str,
    extra_headers: &[(&str, &str)],
) -> Vec<(String, String)> {
    let date = &amz_date[..8];
    let host = match url.port() {
        Some(p) => format!("{}:{p}", url.host_str().unwrap_or_default()),
        None => url.host_str().unwrap_or_default().to_string(),
    };
    let mut q: Vec<(String, String)> = query
        .iter()
        .map(|(k, v)| (uri_encode(k, false), uri_encode(v, false)))
        .collect();
    q.sort();
    let canonical_query = q
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&");
    let mut headers: BTreeMap<String, String> = BTreeMap::new();
    headers.insert("host".into(), host);
    headers.insert("x-amz-content-sha256".into(), EMPTY_SHA256.into());
    headers.insert("x-amz-date".into(), amz_date.into());
    for (k, v) in extra_headers {
        headers.insert(k.to_ascii_lowercase(), v.trim().to_string());
    }
    let canonical_headers: String = headers.iter().map(|(k, v)| format!("{k}:{v}\n")).collect();
    let signed_headers = headers.keys().cloned().collect::<Vec<_>>().join(";");
    // The path is already percent-encoded by `Url`; S3 signs it encoded once.
    let canonical_request = format!(
        "{method}\n{}\n{canonical_query}\n{canonical_headers}\n{signed_headers}\n{EMPTY_SHA256}",
        url.path()
    );
    let scope = format!("{date}/{region}/s3/aws4_request");
    let string_to_sign = format!(
        "AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{}",
        hex::encode(Sha256::digest(canonical_request.as_bytes()))
    );
    let k_date = hmac_sha256(
        format!("AWS4{}", creds.secret_key).as_bytes(),
        date.as_bytes(),
    );
    let k_region = hmac_sha256(&k_date, region.as_bytes());
    let k_service = hmac_sha256(&k_region, b"s3");
    let k_signing = hmac_sha256(&k_service, b"aws4_request");
    let signature = hex::encode(hmac_sha256(&k_signing, string_to_sign.as_bytes()));
    let mut out = vec![
        (
            "Authorization".to_string(),
            format!(
                "AWS4-HMAC-SHA256 Credential={}/{scope}, SignedHeaders={signed_headers}, Signature={signature}",
                creds.access_key
            ),
        ),
        ("x-amz-date".to_string(), amz_date.to_string()),
        ("x-amz-content-sha256".to_string(), EMPTY_SHA256.to_string()),
    ];
    for (k, v) in extra_headers {
        out.push((k.to_string(), v.to_string()));
    }
    out
}

fn amz_now() -> String {
    let f = time::macros::format_description!("[year][month][day]T[hour][minute][second]Z");
    time::OffsetDateTime::now_utc()
        .format(&f)
        .unwrap_or_default()
}

fn get(
    client: &Client,
    t: &Target,
    c: &Credentials,
    query: &[(&str, &str)],
) -> Result<(u16, String)> {
    let mut url = t.bucket_url();
    {
        let mut qp = url.query_pairs_mut();
        for (k, v) in query {
            qp.append_pair(k, v);
        }
    }
    if query.is_empty() {
        url.set_query(None);
    }
    let mut req = client.get(url.clone());
    for (k, v) in sign("GET", &url, query, c, &t.region, &amz_now(), &[]) {
        req = req.header(k, v);
    }
    let resp = req.send().map_err(|e| {
        Error::new(
            ErrorKind::Failed,
            format!("S3 endpoint {} did not answer: {e}", t.endpoint),
        )
    })?;
    let status = resp.status().as_u16();
    let body = resp.text().unwrap_or_default();
    Ok((status, body))
}

/// The `<Code>` of an S3 error answer, if any.
fn error_code(body: &str) -> Option<String> {
    xml_values(body, "Code").into_iter().next()
}

/// Checks, with one signed request (a one-key listing of the prefix), that the endpoint
/// answers, the bucket exists and the credentials may list it. Any failure is bad input: the
/// workspace must not be made on a store the server could not use.
pub fn probe(client: &Client, t: &Target, c: &Credentials) -> Result<()> {
    let prefix = list_prefix(t);
    let (status, body) = get(
        client,
        t,
        c,
        &[("list-type", "2"), ("max-keys", "1"), ("prefix", &prefix)],
    )
    .map_err(|e| Error::new(ErrorKind::Invalid, e.message))?;
    if status == 200 {
        return Ok(());
    }
    let code = error_code(&body).unwrap_or_else(|| format!("HTTP {status}"));
    let why = match code.as_str() {
        "NoSuchBucket" => format!("bucket '{}' does not exist at {}", t.bucket, t.endpoint),
        "InvalidAccessKeyId" | "SignatureDoesNotMatch" | "AccessDenied" => format!(
            "the credentials from ${} and ${} are refused ({code})",
            c.access_key_env, c.secret_key_env
        ),
        _ => format!("listing bucket '{}' failed: {code}", t.bucket),
    };
    Err(Error::new(
        ErrorKind::Invalid,
        format!("S3 probe of {}: {why}", t.endpoint),
    ))
}

fn list_prefix(t: &Target) -> String {
    if t.prefix.is_empty() {
        String::new()
    } else {
        format!("{}/", t.prefix)
    }
}

/// One object of a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Object {
    pub key: String,
    pub size: u64,
}

/// The text of every `<tag>...</tag>`, entities decoded.
fn xml_values(body: &str, tag: &str) -> Vec<String> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let mut out = Vec::new();
    let mut rest = body;
    while let Some(i) = rest.find(&open) {
        rest = &rest[i + open.len()..];
        let Some(j) = rest.find(&close) else { break };
        out.push(xml_unescape(&rest[..j]));
        rest = &rest[j + close.len()..];
    }
    out
}

fn xml_unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&#34;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// Parses one ListObjectsV2 page: the objects, and the continuation token when truncated.
pub fn parse_list_page(body: &str) -> Result<(Vec<Object>, Option<String>)> {
    let bad = |m: String| Error::new(ErrorKind::Failed, format!("S3 listing: {m}"));
    if !body.contains("<ListBucketResult") {
        return Err(bad("the answer is not a ListBucketResult".into()));
    }
    let mut objects = Vec::new();
    for contents in xml_values(body, "Contents") {
        let key = xml_values(&contents, "Key")
            .pop()
            .ok_or_else(|| bad("an object without <Key>".into()))?;
        let size = xml_values(&contents, "Size")
            .pop()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .ok_or_else(|| bad(format!("object '{key}' without a numeric <Size>")))?;
        objects.push(Object { key, size });
    }
    let truncated = xml_values(body, "IsTruncated")
        .pop()
        .is_some_and(|v| v.trim() == "true");
    let next = if truncated {
        Some(
            xml_values(body, "NextContinuationToken")
                .pop()
                .filter(|t| !t.is_empty())
                .ok_or_else(|| bad("truncated page without NextContinuationToken".into()))?,
        )
    } else {
        None
    };
    Ok((objects, next))
}

/// Lists every object under the target's prefix (ListObjectsV2, `page_size` keys a page,
/// following continuation tokens; bounded so a server that never ends a listing cannot hang
/// a run).
pub fn list(client: &Client, t: &Target, c: &Credentials, page_size: u32) -> Result<Vec<Object>> {
    const MAX_PAGES: usize = 100_000;
    let prefix = list_prefix(t);
    let max_keys = page_size.to_string();
    let mut token: Option<String> = None;
    let mut out = Vec::new();
    for _ in 0..MAX_PAGES {
        let mut q: Vec<(&str, &str)> = vec![
            ("list-type", "2"),
            ("max-keys", &max_keys),
            ("prefix", &prefix),
        ];
        if let Some(tok) = &token {
            q.push(("continuation-token", tok));
        }
        let (status, body) = get(client, t, c, &q)?;
        if status != 200 {
            let code = error_code(&body).unwrap_or_else(|| format!("HTTP {status}"));
            return Err(Error::new(
                ErrorKind::Failed,
                format!("S3 listing of {}/{prefix} failed: {code}", t.bucket),
            ));
        }
        let (objs, next) = parse_list_page(&body)?;
        out.extend(objs);
        match next {
            Some(n) => token = Some(n),
            None => return Ok(out),
        }
    }
    Err(Error::new(
        ErrorKind::Failed,
        format!(
            "S3 listing of {}/{prefix} did not end after {MAX_PAGES} pages",
            t.bucket
        ),
    ))
}

/// Deletes one object (DeleteObject: a signed `DELETE` of its key). S3 answers 204 also for
/// a key that is already gone, so a deletion repeated after an interruption succeeds.
pub fn delete(client: &Client, t: &Target, c: &Credentials, key: &str) -> Result<()> {
    let mut url = t.bucket_url();
    // Encoded as SigV4 signs it (every byte but the unreserved ones and `/`), so the path
    // sent is the path signed.
    url.set_path(&format!("/{}/{}", t.bucket, uri_encode(key, true)));
    let mut req = client.delete(url.clone());
    for (k, v) in sign("DELETE", &url, &[], c, &t.region, &amz_now(), &[]) {
        req = req.header(k, v);
    }
    let resp = req.send().map_err(|e| {
        Error::new(
            ErrorKind::Failed,
            format!("S3 endpoint {} did not answer: {e}", t.endpoint),
        )
    })?;
    let status = resp.status().as_u16();
    if (200..300).contains(&status) {
        return Ok(());
    }
    let body = resp.text().unwrap_or_default();
    let code = error_code(&body).unwrap_or_else(|| format!("HTTP {status}"));
    Err(Error::new(
        ErrorKind::Failed,
        format!("S3 deletion of {}/{key} failed: {code}", t.bucket),
    ))
}

/// Object count and bytes, in total and per category.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BucketFootprint {
    pub objects: u64,
    pub bytes: u64,
    /// category -> (objects, bytes)
    pub by_category: BTreeMap<String, (u64, u64)>,
}

/// Sums a listing; `category` gets each key relative to the prefix (`data/greptime/...`).
pub fn footprint(
    objects: &[Object],
    t: &Target,
    category: impl Fn(&str) -> String,
) -> BucketFootprint {
    let prefix = list_prefix(t);
    let mut fp = BucketFootprint::default();
    for o in objects {
        let rel = o.key.strip_prefix(&prefix).unwrap_or(&o.key);
        fp.objects += 1;
        fp.bytes += o.size;
        let e = fp.by_category.entry(category(rel)).or_default();
        e.0 += 1;
        e.1 += o.size;
    }
    fp
}

/// Where a workspace's objects live, as its manifest records it: the endpoint, bucket, key
/// prefix and region, and the NAMES of the variables holding the keys (never their values).
/// Shared by every product with object storage (GreptimeDB's `storage`, InfluxDB 3's
/// `object_store`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Location {
    /// `s3`.
    #[serde(rename = "type")]
    pub kind: String,
    pub endpoint: String,
    pub bucket: String,
    /// Every object's key starts with `<prefix>/`.
    pub prefix: String,
    pub region: String,
    /// The variables tsbsctl reads the credentials from (names only).
    pub access_key_env: String,
    pub secret_key_env: String,
}

/// The S3 flags every product takes, as given (`--s3-endpoint`, `--s3-bucket`, `--s3-region`,
/// `--s3-access-key-env`, `--s3-secret-key-env`); the prefix is the product's.
#[derive(Debug, Clone, Default)]
pub struct LocationFlags {
    pub endpoint: Option<String>,
    pub bucket: Option<String>,
    pub region: Option<String>,
    pub access_key_env: Option<String>,
    pub secret_key_env: Option<String>,
}

/// Key variables when none are named.
pub const DEFAULT_ACCESS_KEY_ENV: &str = "AWS_ACCESS_KEY_ID";
pub const DEFAULT_SECRET_KEY_ENV: &str = "AWS_SECRET_ACCESS_KEY";
/// The region when none is given (as GreptimeDB's and InfluxDB 3's own fallback).
pub const DEFAULT_REGION: &str = "us-east-1";

impl LocationFlags {
    /// True when any flag was given (they need object storage asked for).
    pub fn any(&self) -> bool {
        self.endpoint.is_some()
            || self.bucket.is_some()
            || self.region.is_some()
            || self.access_key_env.is_some()
            || self.secret_key_env.is_some()
    }

    /// Checks the values (reads nothing from the network). `asked`: the flag that chose S3
    /// (`--storage s3`), `usage`: the whole flag set, for the hint of a missing flag.
    pub fn parse(&self, prefix: &str, asked: &str, usage: &str) -> Result<Location> {
        let need = |v: &Option<String>, flag: &str| {
            v.clone().ok_or_else(|| {
                Error::invalid(format!("{asked} needs {flag}")).with_hint(usage.to_string())
            })
        };
        let endpoint = need(&self.endpoint, "--s3-endpoint")?;
        let bucket = need(&self.bucket, "--s3-bucket")?;
        let region = self.region.clone().unwrap_or_else(|| DEFAULT_REGION.into());
        let t = Target::new(&endpoint, &bucket, prefix, &region)?;
        let var = |v: &Option<String>, default: &str| v.clone().unwrap_or_else(|| default.into());
        Ok(Location {
            kind: "s3".into(),
            endpoint: t.endpoint.as_str().trim_end_matches('/').to_string(),
            bucket: t.bucket,
            prefix: t.prefix,
            region: t.region,
            access_key_env: var(&self.access_key_env, DEFAULT_ACCESS_KEY_ENV),
            secret_key_env: var(&self.secret_key_env, DEFAULT_SECRET_KEY_ENV),
        })
    }
}

impl Location {
    pub fn target(&self) -> Result<Target> {
        Target::new(&self.endpoint, &self.bucket, &self.prefix, &self.region)
    }

    /// The credentials, from the named variables of tsbsctl's environment (exit 2 if unset).
    pub fn credentials(&self) -> Result<Credentials> {
        Credentials::from_env(&self.access_key_env, &self.secret_key_env)
    }

    /// One signed listing of the prefix: the endpoint answers, the bucket exists, the keys
    /// may read it. Exit 2 otherwise, naming the variables (never their values).
    pub fn probe(&self) -> Result<()> {
        let creds = self.credentials()?;
        probe(&client()?, &self.target()?, &creds).map_err(|e| {
            e.with_hint(format!(
                "check that {} serves bucket {:?}, and the keys in ${} and ${}",
                self.endpoint, self.bucket, self.access_key_env, self.secret_key_env
            ))
        })
    }

    /// Every object under the prefix.
    pub fn list(&self) -> Result<Vec<Object>> {
        list(&client()?, &self.target()?, &self.credentials()?, 1000)
    }

    /// Whether the prefix holds no object yet (one signed one-key listing).
    pub fn is_empty(&self) -> Result<bool> {
        let t = self.target()?;
        let prefix = list_prefix(&t);
        let q = [
            ("list-type", "2"),
            ("max-keys", "1"),
            ("prefix", prefix.as_str()),
        ];
        let (status, body) = get(&client()?, &t, &self.credentials()?, &q)?;
        if status != 200 {
            let code = error_code(&body).unwrap_or_else(|| format!("HTTP {status}"));
            return Err(Error::failed(format!(
                "S3 listing of {}/{prefix} failed: {code}",
                t.bucket
            )));
        }
        Ok(parse_list_page(&body)?.0.is_empty())
    }

    /// Deletes every object under the prefix, one by one, listing again until the prefix is
    /// empty (a server may still have been writing; bounded). `progress` gets each deleted
    /// object's count so far. Returns the objects and bytes deleted.
    pub fn delete_all(&self, progress: &mut dyn FnMut(u64)) -> Result<(u64, u64)> {
        const ROUNDS: usize = 5;
        let (client, t, creds) = (client()?, self.target()?, self.credentials()?);
        let (mut objects, mut bytes) = (0u64, 0u64);
        for _ in 0..ROUNDS {
            let listed = list(&client, &t, &creds, 1000)?;
            if listed.is_empty() {
                return Ok((objects, bytes));
            }
            for o in listed {
                delete(&client, &t, &creds, &o.key)?;
                objects += 1;
                bytes += o.size;
                progress(objects);
            }
        }
        Err(Error::failed(format!(
            "objects kept appearing under {}/ in bucket {} after {ROUNDS} rounds of deletion",
            self.prefix, self.bucket
        )))
    }

    /// What a footprint records of the bucket: the location, the object count and bytes, and
    /// per part (`category` names each key relative to the prefix) `<part>_objects` and
    /// `<part>_bytes`, plus `parts`: `[{part, label, objects, bytes}]` in the order given.
    pub fn record(
        &self,
        category: impl Fn(&str) -> String,
        parts: &[(&str, &str)],
    ) -> Result<serde_json::Value> {
        let t = self.target()?;
        let objects = list(&client()?, &t, &self.credentials()?, 1000)?;
        let b = footprint(&objects, &t, category);
        let mut o = serde_json::json!({
            "type": self.kind, "endpoint": self.endpoint, "bucket": self.bucket,
            "prefix": self.prefix, "region": self.region,
            "objects": b.objects, "bytes": b.bytes,
        });
        let mut listed = Vec::new();
        for (k, label) in parts {
            let (n, bytes) = b.by_category.get(*k).copied().unwrap_or((0, 0));
            o[format!("{k}_objects")] = n.into();
            o[format!("{k}_bytes")] = bytes.into();
            listed
                .push(serde_json::json!({"part": k, "label": label, "objects": n, "bytes": bytes}));
        }
        o["parts"] = listed.into();
        Ok(o)
    }

    /// `S3 bucket B at E under P/ (region R)`.
    pub fn describe(&self) -> String {
        format!(
            "S3 bucket {} at {} under {}/ (region {})",
            self.bucket, self.endpoint, self.prefix, self.region
        )
    }

    /// The variables the keys are read from: a server gets the keys under its own names, so
    /// these are removed from its environment (they are the user's, inherited by tsbsctl).
    pub fn source_vars(&self) -> Vec<String> {
        vec![self.access_key_env.clone(), self.secret_key_env.clone()]
    }

    /// `credentials from $A and $B`.
    pub fn keys_from(&self) -> String {
        format!(
            "credentials from ${} and ${}",
            self.access_key_env, self.secret_key_env
        )
    }
}

/// The client of tsbsctl's S3 requests ([`crate::http::s3`]).
pub fn client() -> Result<Client> {
    crate::http::s3()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// AWS's worked examples for S3 SigV4 (the "GET Object" and "GET Bucket (List Objects)"
    /// examples of the Signature Version 4 header-signing page).
    #[test]
    fn signs_the_aws_examples() {
        let c = Credentials::new(
            "AKIAIOSFODNN7EXAMPLE",
            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        );
        let url = Url::parse("https://examplebucket.s3.amazonaws.com/test.txt").unwrap();
        let h = sign(
            "GET",
            &url,
            &[],
            &c,
            "us-east-1",
            "20130524T000000Z",
            &[("Range", "bytes=0-9")],
        );
        assert!(
            h[0].1.ends_with(
                "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
            ),
            "{}",
            h[0].1
        );
        let url =
            Url::parse("https://examplebucket.s3.amazonaws.com/?max-keys=2&prefix=J").unwrap();
        let h = sign(
            "GET",
            &url,
            &[("max-keys", "2"), ("prefix", "J")],
            &c,
            "us-east-1",
            "20130524T000000Z",
            &[],
        );
        assert!(
            h[0].1.ends_with(
                "Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"
            ),
            "{}",
            h[0].1
        );
    }

    #[test]
    fn hmac_matches_rfc4231_case_2() {
        assert_eq!(
            hex::encode(hmac_sha256(b"Jefe", b"what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn credentials_never_print_their_values() {
        let c = Credentials {
            access_key_env: "AK".into(),
            secret_key_env: "SK".into(),
            access_key: "visible-key-id".into(),
            secret_key: "very-secret".into(),
        };
        let s = format!("{c:?}");
        assert!(
            !s.contains("visible-key-id") && !s.contains("very-secret"),
            "{s}"
        );
        assert!(s.contains("$AK") && s.contains("$SK"));
    }

    #[test]
    fn missing_env_var_is_bad_input_naming_it() {
        let e = Credentials::from_env("TSBSCTL_TEST_S3_UNSET_ACCESS", "PATH").unwrap_err();
        assert_eq!(e.kind, ErrorKind::Invalid);
        assert!(
            e.message.contains("$TSBSCTL_TEST_S3_UNSET_ACCESS"),
            "{}",
            e.message
        );
    }

    #[test]
    fn target_refuses_bad_values() {
        for (ep, b, p) in [
            ("ftp://x", "bucket", ""),
            ("http://user:pw@127.0.0.1:9000", "bucket", ""),
            ("http://127.0.0.1:9000/bucket", "bucket", ""),
            ("not a url", "bucket", ""),
            ("http://127.0.0.1:9000", "Bu", ""),
            ("http://127.0.0.1:9000", "bucket", "a/../b"),
        ] {
            let e = Target::new(ep, b, p, "us-east-1").unwrap_err();
            assert_eq!(e.kind, ErrorKind::Invalid, "{ep} {b} {p}");
        }
        let t = Target::new(
            "http://127.0.0.1:9000",
            "tsbs-data",
            "/runs/a/",
            "us-east-1",
        )
        .unwrap();
        assert_eq!(t.prefix, "runs/a");
        assert_eq!(t.bucket_url().as_str(), "http://127.0.0.1:9000/tsbs-data");
    }

    #[test]
    fn parses_pages_and_tokens() {
        let page = r#"<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name><Prefix>p/</Prefix>
<Contents><Key>p/data/greptime/public/1024/1024_0000000000/a.parquet</Key><Size>100</Size></Contents>
<Contents><Key>p/x&amp;y</Key><Size>7</Size></Contents>
<IsTruncated>true</IsTruncated><NextContinuationToken>tok/1=</NextContinuationToken></ListBucketResult>"#;
        let (objs, next) = parse_list_page(page).unwrap();
        assert_eq!(objs.len(), 2);
        assert_eq!(objs[1].key, "p/x&y");
        assert_eq!(next.as_deref(), Some("tok/1="));
        let last = "<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>";
        assert_eq!(parse_list_page(last).unwrap(), (vec![], None));
        assert!(parse_list_page("<Error><Code>NoSuchBucket</Code></Error>").is_err());
        let t = Target::new("http://127.0.0.1:1", "bucket", "p", "us-east-1").unwrap();
        let fp = footprint(&objs, &t, |k| {
            if k.ends_with(".parquet") {
                "data"
            } else {
                "other"
            }
            .to_string()
        });
        assert_eq!((fp.objects, fp.bytes), (2, 107));
        assert_eq!(fp.by_category["data"], (1, 100));
    }
}
