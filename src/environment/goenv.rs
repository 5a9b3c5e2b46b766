//! The user's Go network settings, for the closed build (real finding B1).
//!
//! The build runs with `GOENV=off` and a private `HOME`, so Go itself would ignore what the
//! user set with `go env -w`. The pinned TSBS has no `vendor/`: its first build downloads
//! every module, and a user whose proxy lives only in the go env file could not build. So the
//! settings below are read the way the user's `go` reads them (a non-empty environment variable
//! wins, else the user's go env file) and passed to the build explicitly. They are recorded
//! with any credentials in URLs redacted (`https://<redacted>@proxy/`).

use std::collections::BTreeMap;
use std::path::PathBuf;

/// The settings that decide where modules and checksums come from.
pub const GO_NETWORK_SETTINGS: [&str; 6] = [
    "GOPROXY",
    "GONOPROXY",
    "GOPRIVATE",
    "GONOSUMDB",
    "GOSUMDB",
    "GOINSECURE",
];

/// One setting and where it was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoSetting {
    pub key: String,
    /// The value as Go would use it (may hold credentials: never record it as is).
    pub value: String,
    /// `environment`, or the path of the go env file.
    pub from: String,
}

impl GoSetting {
    /// The value with credentials in URLs redacted, for manifests and logs.
    pub fn redacted(&self) -> String {
        redact_urls(&self.value)
    }
}

/// The user's settings from this process's environment and the user's go env file.
pub fn user_settings() -> Vec<GoSetting> {
    settings_with(&|k| std::env::var(k).ok())
}

/// As [`user_settings`], with `getenv` standing in for the environment.
pub fn settings_with(getenv: &dyn Fn(&str) -> Option<String>) -> Vec<GoSetting> {
    let file = env_file(getenv);
    let from_file = file
        .as_ref()
        .and_then(|f| std::fs::read(f).ok())
        .map(|b| parse_env_file(&String::from_utf8_lossy(&b)))
        .unwrap_or_default();
    let mut out = Vec::new();
    for key in GO_NETWORK_SETTINGS {
        // Go's cfg.Getenv: an empty variable counts as unset.
        if let Some(v) = getenv(key).filter(|v| !v.is_empty()) {
            out.push(GoSetting {
                key: key.into(),
                value: v,
                from: "environment".into(),
            });
        } else if let Some(v) = from_file.get(key).filter(|v| !v.is_empty()) {
            out.push(GoSetting {
                key: key.into(),
                value: v.clone(),
                from: file
                    .as_ref()
                    .map(|f| f.display().to_string())
                    .unwrap_or_default(),
            });
        }
    }
    out
}

/// Where the user's `go` keeps `go env -w` settings (cmd/go `cfg.EnvFile`): `$GOENV` unless it
/// is `off`, else `os.UserConfigDir()/go/env`.
pub fn env_file(getenv: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let nonempty = |k: &str| getenv(k).filter(|v| !v.is_empty());
    if let Some(f) = nonempty("GOENV") {
        return (f != "off").then(|| PathBuf::from(f));
    }
    let config = if cfg!(target_os = "macos") {
        PathBuf::from(nonempty("HOME")?).join("Library/Application Support")
    } else {
        match nonempty("XDG_CONFIG_HOME") {
            // Go refuses a relative XDG_CONFIG_HOME (and then reads no file).
            Some(x) => {
                let p = PathBuf::from(x);
                if !p.is_absolute() {
                    return None;
                }
                p
            }
            None => PathBuf::from(nonempty("HOME")?).join(".config"),
        }
    };
    Some(config.join("go").join("env"))
}

/// The go env file's `KEY=VALUE` lines (cmd/go `readEnvFile`: a line must contain `=` and
/// start with an upper-case letter; everything else is skipped).
pub fn parse_env_file(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for line in text.split('\n') {
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        if !k.starts_with(|c: char| c.is_ascii_uppercase()) {
            continue;
        }
        out.insert(k.to_string(), v.to_string());
    }
    out
}

/// Replaces the userinfo of every `scheme://user[:password]@` in `s` with `<redacted>`
/// (GOPROXY lists use `,` and `|`, GOSUMDB a space, so each URL is found where it starts).
pub fn redact_urls(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("://") {
        let (head, tail) = rest.split_at(i + 3);
        out.push_str(head);
        let end = tail
            .find(|c: char| c == '/' || c == ',' || c == '|' || c.is_whitespace())
            .unwrap_or(tail.len());
        let authority = &tail[..end];
        match authority.rfind('@') {
            Some(at) => {
                out.push_str("<redacted>");
                out.push_str(&authority[at..]);
            }
            None => out.push_str(authority),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_in_urls_are_redacted() {
        assert_eq!(
            redact_urls("https://u:secret@proxy.corp/go,https://proxy.golang.org|direct"),
            "https://<redacted>@proxy.corp/go,https://proxy.golang.org|direct"
        );
        assert_eq!(
            redact_urls("sum.golang.org+033de0ae https://tok@sum.corp"),
            "sum.golang.org+033de0ae https://<redacted>@sum.corp"
        );
        assert_eq!(redact_urls("off"), "off");
        assert_eq!(
            redact_urls("*.corp.example,rsc.io/private"),
            "*.corp.example,rsc.io/private"
        );
    }

    #[test]
    fn the_environment_wins_over_the_file_and_empty_counts_as_unset() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = dir.path().join("cfg");
        std::fs::create_dir_all(cfg.join("go")).unwrap();
        std::fs::write(
            cfg.join("go/env"),
            "GOPROXY=https://goproxy.cn,direct\n# comment\ngoprivate=x\nGOPRIVATE=*.corp\nGOSUMDB=off\n",
        )
        .unwrap();
        let home = dir.path().display().to_string();
        let xdg = cfg.display().to_string();
        let get = |k: &str| match k {
            "HOME" => Some(home.clone()),
            "XDG_CONFIG_HOME" => Some(xdg.clone()),
            "GOSUMDB" => Some("sum.golang.org".into()),
            "GOPRIVATE" => Some(String::new()),
            _ => None,
        };
        let s = settings_with(&get);
        let file = cfg.join("go/env").display().to_string();
        let find = |k: &str| s.iter().find(|x| x.key == k).cloned();
        assert_eq!(find("GOPROXY").unwrap().value, "https://goproxy.cn,direct");
        assert_eq!(find("GOPROXY").unwrap().from, file);
        assert_eq!(find("GOPRIVATE").unwrap().value, "*.corp");
        assert_eq!(find("GOSUMDB").unwrap().value, "sum.golang.org");
        assert_eq!(find("GOSUMDB").unwrap().from, "environment");
        assert_eq!(find("GOINSECURE"), None);
        // GOENV=off: no file at all; GOENV=path: that file.
        let off = |k: &str| {
            if k == "GOENV" {
                Some("off".into())
            } else {
                get(k)
            }
        };
        assert!(settings_with(&off).iter().all(|x| x.from == "environment"));
        let other = dir.path().join("other-env");
        std::fs::write(&other, "GOPROXY=https://mirror.example\n").unwrap();
        let o = other.display().to_string();
        let named = |k: &str| if k == "GOENV" { Some(o.clone()) } else { None };
        assert_eq!(settings_with(&named)[0].value, "https://mirror.example");
        // Without XDG_CONFIG_HOME: $HOME/.config/go/env.
        let plain = |k: &str| (k == "HOME").then(|| "/h".to_string());
        if !cfg!(target_os = "macos") {
            assert_eq!(env_file(&plain), Some(PathBuf::from("/h/.config/go/env")));
        }
    }
}
