//! Where each remote thing lives (DESIGN.md, Sources): environment > `[sources]` in
//! `<root>/config.toml` > default. Values may be `http(s)://` URLs, `file://` URLs or plain
//! directory paths (an offline mirror directory laid out like the real hosts).
//!
//! Plain paths become `file://` URLs here, so the rest of the tool only ever sees URLs.
//! A relative path in the environment is taken from the current directory; one in
//! `config.toml` from the directory that holds the file (the state root).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::paths::Root;

/// One configurable remote location: its key in `[sources]` of `config.toml`, the
/// environment variable that overrides it, its built-in value, and whether paths are joined
/// under it. The core's are here ([`SourceKey::CORE`]); a product registers those of its
/// vendor's hosts (`product::Entry::sources`), and [`Sources::load`] takes the whole list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SourceKey {
    config_key: &'static str,
    env_var: &'static str,
    default_value: &'static str,
    /// A base URL under which paths are joined (else one full URL).
    base: bool,
    /// A git remote: `ssh://`, `git://` and scp-like `user@host:path` are locations too.
    git: bool,
}

impl SourceKey {
    /// A source: `config_key` in `[sources]`, `env_var`, the built-in `default_value`,
    /// `base` when paths are joined under it, `git` when it is a git remote.
    pub const fn new(
        config_key: &'static str,
        env_var: &'static str,
        default_value: &'static str,
        base: bool,
        git: bool,
    ) -> SourceKey {
        SourceKey {
            config_key,
            env_var,
            default_value,
            base,
            git,
        }
    }

    /// Releases on GitHub.
    pub const GITHUB: SourceKey = SourceKey::new(
        "github",
        "TSBSCTL_GITHUB_URL",
        "https://github.com",
        true,
        false,
    );
    /// GitHub's API (the latest release's tag).
    pub const GITHUB_API: SourceKey = SourceKey::new(
        "github_api",
        "TSBSCTL_GITHUB_API_URL",
        "https://api.github.com",
        true,
        false,
    );
    /// Go's downloads.
    pub const GO_DL: SourceKey = SourceKey::new(
        "go_dl",
        "TSBSCTL_GO_DL_URL",
        "https://go.dev/dl",
        true,
        false,
    );
    /// The TSBS fork the benchmarks build (a git remote).
    pub const TSBS_REPO: SourceKey = SourceKey::new(
        "tsbs_repo",
        "TSBSCTL_TSBS_REPO",
        "https://github.com/GreptimeTeam/tsbs.git",
        false,
        true,
    );

    /// The core's keys, in table order; the products' follow them.
    pub const CORE: [SourceKey; 4] = [
        SourceKey::GITHUB,
        SourceKey::GITHUB_API,
        SourceKey::GO_DL,
        SourceKey::TSBS_REPO,
    ];

    /// The key in `[sources]` of `config.toml`.
    pub fn config_key(self) -> &'static str {
        self.config_key
    }

    /// The environment variable that overrides it.
    pub fn env_var(self) -> &'static str {
        self.env_var
    }

    /// The built-in value.
    pub fn default_value(self) -> &'static str {
        self.default_value
    }

    /// True for keys that are a base URL under which paths are joined.
    pub fn is_base(self) -> bool {
        self.base
    }
}

/// Where a value came from, for `env show` and error messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    Environment(&'static str),
    ConfigFile,
    Default,
}

/// The resolved sources.
#[derive(Debug, Clone)]
pub struct Sources {
    values: BTreeMap<SourceKey, (String, Origin)>,
}

impl Sources {
    /// Resolves every key of `keys` (the core's and the products', `product::load_sources`):
    /// environment > config.toml `[sources]` > default. A key in `[sources]` not among them,
    /// or a value that is neither a URL nor a path, is invalid input (exit 2).
    pub fn load(root: &Root, keys: &[SourceKey]) -> Result<Sources> {
        let file = root.config_file();
        let from_file = read_config(&file, keys)?;
        let mut values = BTreeMap::new();
        for &key in keys {
            let env = std::env::var_os(key.env_var());
            let (value, origin) = if let Some(raw) = env {
                let raw = raw.into_string().map_err(|_| {
                    Error::invalid(format!("{} is not valid UTF-8", key.env_var())).with_hint(
                        format!("set {} to a URL or a directory path", key.env_var()),
                    )
                })?;
                let cwd = std::env::current_dir().map_err(|e| {
                    Error::failed(format!("could not read the current directory: {e}"))
                })?;
                let v = normalize(key, &raw, &cwd).map_err(|why| {
                    Error::invalid(format!("{} = {raw:?}: {why}", key.env_var())).with_hint(
                        format!(
                        "set {} to an http(s):// or file:// URL or a directory path, or unset it",
                        key.env_var()
                    ),
                    )
                })?;
                (v, Origin::Environment(key.env_var()))
            } else if let Some(raw) = from_file.get(&key) {
                let base = file.parent().unwrap_or(Path::new("/"));
                let v = normalize(key, raw, base).map_err(|why| {
                    Error::invalid(format!(
                        "{}: [sources] {} = {raw:?}: {why}",
                        file.display(),
                        key.config_key()
                    ))
                    .with_hint("use an http(s):// or file:// URL or a directory path")
                })?;
                (v, Origin::ConfigFile)
            } else {
                (key.default_value().to_string(), Origin::Default)
            };
            values.insert(key, (value, origin));
        }
        Ok(Sources { values })
    }

    /// Sources of `keys` with every default (library callers and tests).
    pub fn defaults(keys: &[SourceKey]) -> Sources {
        let values = keys
            .iter()
            .copied()
            .map(|k| (k, (k.default_value().to_string(), Origin::Default)))
            .collect();
        Sources { values }
    }

    /// The value for `key`, without a trailing slash. A key the sources were not loaded with
    /// is a defect of the caller (every product's keys are loaded).
    pub fn get(&self, key: SourceKey) -> &str {
        &self.values[&key].0
    }

    /// Where the value came from.
    pub fn origin(&self, key: SourceKey) -> Origin {
        self.values[&key].1.clone()
    }

    /// `base + "/" + path` for a base key ([`SourceKey::is_base`]).
    pub fn url(&self, key: SourceKey, path: &str) -> String {
        debug_assert!(key.is_base(), "{key:?} is not a base URL");
        format!("{}/{}", self.get(key), path.trim_start_matches('/'))
    }

    /// The setting that decides where `url` comes from, for a hint: `TSBSCTL_GITHUB_URL
    /// (or [sources] github)`, or "the release source" when no key's value holds it.
    pub fn setting_for(&self, url: &str) -> String {
        match self.key_for_url(url) {
            Some(k) => format!("{} (or [sources] {})", k.env_var(), k.config_key()),
            None => "the release source".into(),
        }
    }

    /// The key whose value `url` lies under (the longest match), for hints that name the
    /// setting to change.
    pub fn key_for_url(&self, url: &str) -> Option<SourceKey> {
        self.values
            .iter()
            .filter(|(_, (base, _))| under(url, base))
            .max_by_key(|(_, (base, _))| base.len())
            .map(|(k, _)| *k)
    }
}

/// True when `url` is `base` itself or lies below it (`base/...`, `base?...`).
pub fn under(url: &str, base: &str) -> bool {
    match url.strip_prefix(base) {
        Some(rest) => rest.is_empty() || rest.starts_with('/') || rest.starts_with('?'),
        None => false,
    }
}

/// Reads `[sources]` from `config.toml` (absent file: nothing). Other tables belong to other
/// parts of the tool and are not judged here.
/// The `[defaults]` keys of config.toml (each also an environment variable).
pub const DEFAULTS_KEYS: [&str; 2] = ["tsbs_rev", "go_version"];

/// Refuses a table or a `[defaults]` key config.toml does not know (exit 2, naming it): a
/// typo would otherwise fall back to a default without a word, e.g. `[sourcez]` to the public
/// internet (trial 2 N13). `[sources]` keys are checked where they are read.
pub fn check_config_keys(file: &Path, doc: &toml::Table) -> Result<()> {
    for (table, v) in doc {
        match table.as_str() {
            "sources" => {}
            "defaults" => {
                let t = v.as_table().ok_or_else(|| {
                    Error::invalid(format!("{}: `defaults` must be a table", file.display()))
                        .with_hint("write it as [defaults] with key = \"value\" lines")
                })?;
                if let Some(k) = t.keys().find(|k| !DEFAULTS_KEYS.contains(&k.as_str())) {
                    return Err(Error::invalid(format!(
                        "{}: unknown key `{k}` in [defaults]",
                        file.display()
                    ))
                    .with_hint(format!("known keys: {}", DEFAULTS_KEYS.join(", "))));
                }
            }
            other => {
                return Err(Error::invalid(format!(
                    "{}: unknown {} `{other}`",
                    file.display(),
                    if v.is_table() { "table" } else { "key" }
                ))
                .with_hint("config.toml knows the tables [sources] and [defaults]"))
            }
        }
    }
    Ok(())
}

fn read_config(file: &Path, keys: &[SourceKey]) -> Result<BTreeMap<SourceKey, String>> {
    let text = match fs_err::read_to_string(file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(e) => return Err(e.into()),
    };
    let doc: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        Error::invalid(format!(
            "{} is not valid TOML: {}",
            file.display(),
            e.message()
        ))
        .with_hint(format!("fix or remove {}", file.display()))
    })?;
    check_config_keys(file, &doc)?;
    let mut out = BTreeMap::new();
    let Some(sources) = doc.get("sources") else {
        return Ok(out);
    };
    let table = sources.as_table().ok_or_else(|| {
        Error::invalid(format!("{}: `sources` must be a table", file.display()))
            .with_hint("write it as [sources] with key = \"value\" lines")
    })?;
    for (k, v) in table {
        let key = keys
            .iter()
            .copied()
            .find(|key| key.config_key() == k)
            .ok_or_else(|| {
                let known: Vec<&str> = keys.iter().map(|k| k.config_key()).collect();
                Error::invalid(format!(
                    "{}: unknown key `{k}` in [sources]",
                    file.display()
                ))
                .with_hint(format!("known keys: {}", known.join(", ")))
            })?;
        let s = v.as_str().ok_or_else(|| {
            Error::invalid(format!(
                "{}: [sources] {k} must be a string",
                file.display()
            ))
            .with_hint(format!(
                "write it as {k} = \"https://...\" or a directory path"
            ))
        })?;
        out.insert(key, s.to_string());
    }
    Ok(out)
}

/// Turns a raw value into a URL without a trailing slash; plain paths become `file://` URLs.
fn normalize(key: SourceKey, raw: &str, base_dir: &Path) -> std::result::Result<String, String> {
    let v = raw.trim();
    if v.is_empty() {
        return Err("the value is empty".into());
    }
    if let Some((scheme, rest)) = v.split_once("://") {
        let scheme = scheme.to_ascii_lowercase();
        let allowed: &[&str] = if key.git {
            &["http", "https", "file", "ssh", "git"]
        } else {
            &["http", "https", "file"]
        };
        if !allowed.contains(&scheme.as_str()) {
            return Err(format!("unsupported URL scheme `{scheme}`"));
        }
        let parsed = url::Url::parse(v).map_err(|e| format!("not a valid URL ({e})"))?;
        if scheme == "file" {
            if parsed.to_file_path().is_err() {
                return Err("a file:// URL must hold an absolute local path".into());
            }
        } else if parsed.host_str().is_none_or(str::is_empty) || rest.starts_with('/') {
            return Err("the URL has no host".into());
        }
        if parsed.fragment().is_some() {
            return Err("a URL with a #fragment is not a location".into());
        }
        return Ok(v.trim_end_matches('/').to_string());
    }
    // scp-like git remotes (`git@host:owner/repo.git`) stay as they are.
    if key.git && looks_like_scp(v) {
        return Ok(v.to_string());
    }
    let path = crate::paths::expand_tilde(Path::new(v));
    let abs = if path.is_absolute() {
        path
    } else {
        base_dir.join(path)
    };
    let url = url::Url::from_file_path(crate::paths::normalize(&abs))
        .map_err(|_| "not a usable directory path".to_string())?;
    Ok(url.as_str().trim_end_matches('/').to_string())
}

fn looks_like_scp(v: &str) -> bool {
    match v.split_once(':') {
        Some((host, _)) => !host.is_empty() && !host.contains('/') && host.contains('@'),
        None => false,
    }
}

/// The local path of a `file://` URL, or `None` for any other URL.
pub fn file_url_path(url: &str) -> Option<PathBuf> {
    if !url.get(..7)?.eq_ignore_ascii_case("file://") {
        return None;
    }
    url::Url::parse(url).ok()?.to_file_path().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(key: SourceKey, raw: &str) -> std::result::Result<String, String> {
        normalize(key, raw, Path::new("/base/dir"))
    }

    #[test]
    fn urls_lose_their_trailing_slash() {
        assert_eq!(
            n(SourceKey::GITHUB, "https://mirror.example/gh/").unwrap(),
            "https://mirror.example/gh"
        );
        assert_eq!(
            n(SourceKey::GO_DL, "http://127.0.0.1:8080/go.dev/dl").unwrap(),
            "http://127.0.0.1:8080/go.dev/dl"
        );
    }

    #[test]
    fn plain_paths_become_file_urls() {
        assert_eq!(
            n(SourceKey::GO_DL, "/srv/mirror/go").unwrap(),
            "file:///srv/mirror/go"
        );
        assert_eq!(
            n(SourceKey::GO_DL, "mirror/../m2/go/").unwrap(),
            "file:///base/dir/m2/go"
        );
        assert_eq!(
            n(SourceKey::GO_DL, "/srv/with space").unwrap(),
            "file:///srv/with%20space"
        );
        assert_eq!(
            file_url_path("file:///srv/with%20space/x.tar.gz").unwrap(),
            PathBuf::from("/srv/with space/x.tar.gz")
        );
        assert_eq!(file_url_path("https://x/y"), None);
    }

    #[test]
    fn bad_values_are_refused() {
        assert!(n(SourceKey::GITHUB, "").is_err());
        assert!(n(SourceKey::GITHUB, "ftp://x.example/").is_err());
        assert!(n(SourceKey::GITHUB, "https:///nohost").is_err());
        assert!(n(SourceKey::GITHUB, "file://relative/path").is_err());
        assert!(n(SourceKey::GITHUB, "git@github.com:x/y.git").is_ok()); // a path named so
        assert_eq!(
            n(SourceKey::TSBS_REPO, "git@github.com:x/y.git").unwrap(),
            "git@github.com:x/y.git"
        );
        assert!(n(SourceKey::TSBS_REPO, "ssh://git@github.com/x/y.git").is_ok());
        assert!(n(SourceKey::GITHUB, "ssh://git@github.com/x").is_err());
    }

    #[test]
    fn config_file_unknown_key_and_bad_toml_name_file_and_key() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::at(dir.path());
        std::fs::write(root.config_file(), "[sources]\ngithubb = \"https://x\"\n").unwrap();
        let e = Sources::load(&root, &SourceKey::CORE).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.message.contains("config.toml"), "{}", e.message);
        assert!(e.message.contains("githubb"), "{}", e.message);
        assert!(e.hint.unwrap().contains("github_api"));

        // Trial 2 N13: typos outside [sources] were ignored.
        for (text, named) in [
            ("[sourcez]\ngithub = \"x\"\n", "unknown table `sourcez`"),
            (
                "[defaults]\ntsbs_revv = \"x\"\n",
                "unknown key `tsbs_revv` in [defaults]",
            ),
            ("bogus_key = 1\n", "unknown key `bogus_key`"),
        ] {
            std::fs::write(root.config_file(), text).unwrap();
            let e = Sources::load(&root, &SourceKey::CORE).unwrap_err();
            assert_eq!(e.exit_code(), 2);
            assert!(e.message.contains(named), "{}", e.message);
        }
        std::fs::write(root.config_file(), "[sources\n").unwrap();
        let e = Sources::load(&root, &SourceKey::CORE).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.message.contains("config.toml"), "{}", e.message);

        std::fs::write(root.config_file(), "[sources]\ngo_dl = 3\n").unwrap();
        let e = Sources::load(&root, &SourceKey::CORE).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.message.contains("go_dl"), "{}", e.message);

        std::fs::write(root.config_file(), "[sources]\ngo_dl = \"gopher://x\"\n").unwrap();
        let e = Sources::load(&root, &SourceKey::CORE).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.message.contains("go_dl"), "{}", e.message);
    }

    // One test touches the process environment, so the precedence is checked in one place.
    #[test]
    fn environment_beats_config_file_beats_default() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::at(dir.path());
        std::fs::write(
            root.config_file(),
            "[defaults]\ntsbs_rev = \"main\"\n[sources]\ngithub = \"https://cfg.example/gh/\"\ngo_dl = \"offline/go\"\n",
        )
        .unwrap();
        std::env::set_var("TSBSCTL_GITHUB_URL", "http://env.example:81/gh");
        std::env::remove_var("TSBSCTL_GO_DL_URL");
        std::env::remove_var("TSBSCTL_GITHUB_API_URL");
        let s = Sources::load(&root, &SourceKey::CORE);
        std::env::remove_var("TSBSCTL_GITHUB_URL");
        let s = s.unwrap();
        assert_eq!(s.get(SourceKey::GITHUB), "http://env.example:81/gh");
        assert_eq!(
            s.origin(SourceKey::GITHUB),
            Origin::Environment("TSBSCTL_GITHUB_URL")
        );
        let go = format!(
            "{}/offline/go",
            url::Url::from_file_path(dir.path()).unwrap()
        );
        assert_eq!(s.get(SourceKey::GO_DL), go);
        assert_eq!(s.origin(SourceKey::GO_DL), Origin::ConfigFile);
        assert_eq!(s.get(SourceKey::GITHUB_API), "https://api.github.com");
        assert_eq!(s.origin(SourceKey::GITHUB_API), Origin::Default);
        assert_eq!(
            s.url(SourceKey::GO_DL, "/go1.21.13.linux-amd64.tar.gz"),
            format!("{go}/go1.21.13.linux-amd64.tar.gz")
        );
        assert_eq!(
            s.key_for_url("https://api.github.com/repos/x"),
            Some(SourceKey::GITHUB_API)
        );
        assert_eq!(s.key_for_url("https://api.github.community/x"), None);
    }
}
