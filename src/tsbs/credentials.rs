//! HTTP basic credentials of the external servers of this process (`bench greptimedb --url U
//! --user NAME --password-env VAR`), kept in memory only and keyed by the servers' origins.
//!
//! Why a store and not a parameter: tsbsctl's own requests to a server (DDL, row counts,
//! flush, compaction, the probe) reach it through many paths that carry only an endpoint
//! (`Maintenance::sql`, `Loading::count_rows`, the before-queries op); looking the endpoint
//! up here gives every one of them the credentials, and a managed server, never registered,
//! never gets any. The TSBS tools get them the same way ([`crate::tsbs::command`]): by the
//! URLs they are given, in the form the product's tool reads ([`BasicAuthStyle`]).

use std::sync::Mutex;

use super::command::Secret;

/// A user name and its password.
#[derive(Clone, PartialEq, Eq)]
pub struct BasicAuth {
    pub user: String,
    pub password: Secret,
}

impl std::fmt::Debug for BasicAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "BasicAuth({}:<redacted>)", self.user)
    }
}

/// How a product's TSBS tool takes basic credentials.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BasicAuthStyle {
    /// Two config keys (`tsbs_load_greptime`: `user`, `password`; it sends Basic auth only
    /// when both are set). The password goes to the tool's nameless `config.json`.
    ConfigKeys {
        user: &'static str,
        password: &'static str,
    },
    /// No flag of its own (`tsbs_run_queries_influx`): the credentials go into the URLs as
    /// `http://USER:PASS@host`, which Go's net/http sends as `Authorization: Basic`; the
    /// `urls` key then goes to `config.json`, never argv.
    UrlUserinfo,
}

static STORE: Mutex<Vec<(String, BasicAuth)>> = Mutex::new(Vec::new());

/// `scheme://host:port` of a URL (the default port spelled out), or `None`.
fn origin(u: &str) -> Option<String> {
    let p = url::Url::parse(u).ok()?;
    Some(format!(
        "{}://{}:{}",
        p.scheme(),
        p.host_str()?,
        p.port_or_known_default()?
    ))
}

/// Registers `auth` for every URL in `urls` (replacing what an origin had).
pub fn register(urls: &[String], auth: &BasicAuth) {
    let mut s = STORE.lock().unwrap_or_else(|e| e.into_inner());
    for o in urls.iter().filter_map(|u| origin(u)) {
        s.retain(|(k, _)| *k != o);
        s.push((o, auth.clone()));
    }
}

/// The credentials registered for the server of `url`.
pub fn for_url(url: &str) -> Option<BasicAuth> {
    let o = origin(url)?;
    let s = STORE.lock().unwrap_or_else(|e| e.into_inner());
    s.iter().find(|(k, _)| *k == o).map(|(_, a)| a.clone())
}

/// `url` with `auth` as its userinfo (percent-encoded as URLs need; Go decodes it).
pub fn with_userinfo(url: &str, auth: &BasicAuth) -> Option<String> {
    let mut p = url::Url::parse(url).ok()?;
    p.set_username(&auth.user).ok()?;
    p.set_password(Some(auth.password.expose())).ok()?;
    // `Url` adds a `/` path to a bare origin; the tools append their own paths.
    let s = p.to_string();
    Some(if url.ends_with('/') {
        s
    } else {
        s.strip_suffix('/').map(str::to_string).unwrap_or(s)
    })
}

/// `url` with the user shown and the password as `<redacted>`, for logs.
pub fn shown_userinfo(url: &str, user: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => format!("{scheme}://{user}:<redacted>@{rest}"),
        None => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registered_by_origin_only() {
        let a = BasicAuth {
            user: "bench".into(),
            password: Secret::new("p@ss:w/rd"),
        };
        register(&["http://10.9.8.7:4000".into()], &a);
        assert_eq!(for_url("http://10.9.8.7:4000/v1/sql"), Some(a.clone()));
        assert_eq!(for_url("http://10.9.8.7:4001"), None);
        assert_eq!(for_url("http://127.0.0.1:4000"), None);
        let u = with_userinfo("http://10.9.8.7:4000", &a).unwrap();
        assert_eq!(u, "http://bench:p%40ss%3Aw%2Frd@10.9.8.7:4000");
        assert_eq!(
            shown_userinfo("http://10.9.8.7:4000", "bench"),
            "http://bench:<redacted>@10.9.8.7:4000"
        );
        assert!(!format!("{a:?}").contains("p@ss"));
    }
}
