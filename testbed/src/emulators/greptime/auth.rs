//! `--user-provider static_user_provider:cmd:U=P[,U=P]` / `static_user_provider:file:PATH`
//! (one `U=P` a line) and the HTTP authentication of the real server
//! (`src/servers/src/http/authorize.rs`): every path under `/v1/` except
//! `/v1/influxdb/ping`, `/v1/influxdb/health` and `/v1/health` needs credentials; `/health`,
//! `/status` and `/metrics` do not. SQL takes `x-greptime-auth` or `Authorization: Basic`;
//! InfluxDB paths also take `Authorization: Token U:P` or `?u=&p=`. A refusal is 401 with the
//! server's JSON error (`{"code":7002,"error":"Username and password does not match, username:
//! U","execution_time_ms":0}`) and its `x-greptime-err-*` headers.

use std::collections::BTreeMap;

use super::store::GtError;

/// The users of a static user provider.
#[derive(Debug, Clone, Default)]
pub struct Users(BTreeMap<String, String>);

/// Parses `--user-provider`; `Err` = the message the server exits with.
pub fn parse_provider(spec: &str) -> Result<Users, String> {
    let Some(rest) = spec.strip_prefix("static_user_provider:") else {
        return Err(format!(
            "Invalid config value: {spec}, user provider not supported"
        ));
    };
    let text = match rest.split_once(':') {
        Some(("cmd", list)) => list.replace(',', "\n"),
        Some(("file", path)) => std::fs::read_to_string(path)
            .map_err(|e| format!("Invalid config value: {path}, failed to read: {e}"))?,
        _ => {
            return Err(format!(
                "Invalid config value: {rest}, StaticUserProviderOption must be in format `<option>:<value>`"
            ))
        }
    };
    let mut users = BTreeMap::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        match line.split_once('=') {
            Some((u, p)) if !u.is_empty() => {
                users.insert(u.to_string(), p.to_string());
            }
            _ => {
                return Err(format!(
                    "Invalid config value: {line}, Expect a user=password pair"
                ))
            }
        }
    }
    if users.is_empty() {
        return Err("Invalid config value: , empty user list".into());
    }
    Ok(Users(users))
}

fn needs_auth(path: &str) -> bool {
    const PUBLIC: [&str; 3] = ["/v1/influxdb/ping", "/v1/influxdb/health", "/v1/health"];
    path.starts_with("/v1/") && !PUBLIC.iter().any(|p| path.starts_with(p))
}

fn decode_b64(s: &str) -> Option<Vec<u8>> {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let s = s.trim_end_matches('=');
    let mut out = Vec::new();
    let mut acc = 0u32;
    let mut bits = 0;
    for c in s.bytes() {
        let v = T.iter().position(|&t| t == c)? as u32;
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

fn invalid_header() -> GtError {
    GtError::new(7004, "Invalid http authorization header".to_string())
}

/// `Basic <b64(U:P)>` → (U, P).
fn basic(credential: &str) -> Result<(String, String), GtError> {
    if credential.contains(' ') {
        return Err(invalid_header());
    }
    let raw = decode_b64(credential).ok_or_else(|| {
        GtError::new(
            7004,
            "Invalid base64 value".to_string(), // InvalidBase64Value
        )
    })?;
    let text = String::from_utf8(raw).map_err(|_| invalid_header())?;
    text.split_once(':')
        .map(|(u, p)| (u.to_string(), p.to_string()))
        .ok_or_else(invalid_header)
}

impl Users {
    /// `Ok` when the request may go on; `Err` = the 401 refusal.
    pub fn check(
        &self,
        path: &str,
        query: &str,
        header: impl Fn(&str) -> Option<String>,
    ) -> Result<(), GtError> {
        if !needs_auth(path) {
            return Ok(());
        }
        let influx = path.starts_with("/v1/influxdb/");
        let (user, password) = if influx {
            match header("authorization") {
                Some(h) => {
                    let (scheme, cred) = h.split_once(' ').ok_or_else(invalid_header)?;
                    match scheme.to_ascii_lowercase().as_str() {
                        "basic" => basic(cred)?,
                        "token" => cred
                            .split_once(':')
                            .map(|(u, p)| (u.to_string(), p.to_string()))
                            .ok_or_else(invalid_header)?,
                        other => {
                            return Err(GtError::new(
                                7004,
                                format!("Unsupported http auth scheme, name: {other}"),
                            ))
                        }
                    }
                }
                None => {
                    let q: BTreeMap<String, String> = url::form_urlencoded::parse(query.as_bytes())
                        .map(|(k, v)| (k.into_owned(), v.into_owned()))
                        .collect();
                    match (q.get("u"), q.get("p")) {
                        (Some(u), Some(p)) if !u.is_empty() && !p.is_empty() => {
                            (u.clone(), p.clone())
                        }
                        (None, None) => {
                            return Err(GtError::new(
                                7003,
                                "Not found influx http authorization info".to_string(),
                            ))
                        }
                        _ => {
                            return Err(GtError::new(
                                1004,
                                "influxdb auth: username and password must be provided together"
                                    .to_string(),
                            ))
                        }
                    }
                }
            }
        } else {
            let h = header("x-greptime-auth")
                .or_else(|| header("authorization"))
                .ok_or_else(|| {
                    GtError::new(
                        7003,
                        "Not found http or grpc authorization header".to_string(),
                    )
                })?;
            let (scheme, cred) = h.split_once(' ').ok_or_else(invalid_header)?;
            if !scheme.eq_ignore_ascii_case("basic") {
                return Err(GtError::new(
                    7004,
                    format!(
                        "Unsupported http auth scheme, name: {}",
                        scheme.to_ascii_lowercase()
                    ),
                ));
            }
            basic(cred)?
        };
        match self.0.get(&user) {
            None => Err(GtError::new(
                7000,
                format!("User not found, username: {user}"),
            )),
            Some(p) if *p != password => Err(GtError::new(
                7002,
                format!("Username and password does not match, username: {user}"),
            )),
            Some(_) => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn providers_and_checks() {
        let u = parse_provider("static_user_provider:cmd:bench=pw:x,other=o").unwrap();
        assert!(parse_provider("ldap:x").is_err());
        assert!(parse_provider("static_user_provider:cmd:nopair").is_err());
        let none = |_: &str| None::<String>;
        assert!(u.check("/health", "", none).is_ok());
        assert!(u.check("/v1/influxdb/ping", "", none).is_ok());
        assert_eq!(u.check("/v1/sql", "", none).unwrap_err().code, 7003);
        // base64("bench:pw:x")
        let good = |n: &str| (n == "authorization").then(|| "Basic YmVuY2g6cHc6eA==".to_string());
        assert!(u.check("/v1/sql", "", good).is_ok());
        assert!(u.check("/v1/influxdb/write", "", good).is_ok());
        // base64("bench:nope")
        let bad = |n: &str| (n == "authorization").then(|| "Basic YmVuY2g6bm9wZQ==".to_string());
        let e = u.check("/v1/sql", "", bad).unwrap_err();
        assert_eq!(e.code, 7002);
        assert_eq!(
            e.msg,
            "Username and password does not match, username: bench"
        );
        assert!(u
            .check("/v1/influxdb/write", "u=bench&p=pw%3Ax", none)
            .is_ok());
        assert_eq!(
            u.check("/v1/influxdb/write", "", none).unwrap_err().code,
            7003
        );
    }
}
