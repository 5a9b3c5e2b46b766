//! Downloads: the real HTTP client (`tsbsctl::download::Downloader`) against the testbed
//! mirror, in-process (no command downloads on its own yet), with a temp state root whose
//! `config.toml` points every source at the mirror.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use testbed::mirror::{Body, Fault, Mirror, GITHUB, GITHUB_API, GO_DL, INFLUXDATA_DL};
use tsbsctl::download::{
    parse_checksum_file, Downloader, Verified, ACCEPT_ARTIFACT, ACCEPT_GITHUB_JSON,
    DEFAULT_ATTEMPTS,
};
use tsbsctl::error::ErrorKind;
use tsbsctl::hash::sha256_hex;
use tsbsctl::output::SilentReporter;
use tsbsctl::paths::Root;
use tsbsctl::sources::{SourceKey, Sources};

/// Serialises the tests that touch `GITHUB_TOKEN` in this process's environment.
static ENV: Mutex<()> = Mutex::new(());

struct World {
    mirror: Mirror,
    _dir: tempfile::TempDir,
    root: Root,
    sources: Sources,
}

fn world() -> World {
    let mirror = Mirror::start().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = Root::at(dir.path().join("root"));
    root.ensure().unwrap();
    let mut cfg = String::from("[sources]\n");
    for (var, value) in mirror.env() {
        let key = tsbsctl::product::source_keys()
            .into_iter()
            .find(|k| k.env_var() == var)
            .unwrap();
        cfg.push_str(&format!("{} = \"{value}\"\n", key.config_key()));
    }
    std::fs::write(root.config_file(), cfg).unwrap();
    let sources = tsbsctl::product::load_sources(&root).unwrap();
    World {
        mirror,
        _dir: dir,
        root,
        sources,
    }
}

impl World {
    fn downloader(&self) -> Downloader {
        let _g = ENV.lock().unwrap_or_else(|e| e.into_inner());
        Downloader::new(&self.root, &self.sources, Arc::new(SilentReporter))
            .unwrap()
            .with_github_token(None)
            .with_retry_base(Duration::from_millis(5))
    }

    /// Puts `n` bytes of [`payload`] at [`ASSET`]; returns them and their digest.
    fn put_asset(&self, n: usize) -> (Vec<u8>, String) {
        let data = payload(n);
        let sha = sha256_hex(&data);
        self.mirror.put_bytes(ASSET, data.clone());
        (data, sha)
    }

    /// [`ASSET`] fetched and verified against `sha` by a new downloader.
    fn fetch_asset(&self, sha: &str) -> tsbsctl::error::Result<Verified> {
        self.downloader()
            .fetch_verified(&self.mirror.url(ASSET), sha, NAME)
    }

    fn cache_dir(&self, sha: &str) -> PathBuf {
        self.root.downloads().join(sha)
    }
}

/// Bytes that do not repeat in a way that could hide an offset error.
fn payload(n: usize) -> Vec<u8> {
    let mut x: u32 = 0x1234_5678;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect()
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

const ASSET: &str = "/github.com/GreptimeTeam/greptimedb/releases/download/v1.2.0/greptime-linux-amd64-v1.2.0.tar.gz";
const NAME: &str = "greptime-linux-amd64-v1.2.0.tar.gz";

#[test]
fn resume_after_a_dropped_connection_sends_range_and_verifies() {
    let w = world();
    let (data, sha) = w.put_asset(300_000);
    w.mirror.fault_once(ASSET, Fault::CutAfter(100_000));

    let v = w.fetch_asset(&sha).unwrap();
    assert!(!v.cached);
    assert_eq!(v.sha256, sha);
    assert_eq!(v.size, 300_000);
    assert_eq!(v.path, w.cache_dir(&sha).join(NAME));
    assert_eq!(std::fs::read(&v.path).unwrap(), data);

    let reqs = w.mirror.requests_for(ASSET);
    assert_eq!(reqs.len(), 2, "{reqs:?}");
    assert_eq!(reqs[0].header("range"), None);
    assert_eq!(reqs[1].header("range"), Some("bytes=100000-"));
    assert_eq!(
        reqs[0].header("user-agent"),
        Some(format!("tsbsctl/{}", tsbsctl::VERSION).as_str())
    );
    assert_eq!(reqs[0].header("accept"), Some(ACCEPT_ARTIFACT));
    assert!(!files_in(&w.cache_dir(&sha))
        .iter()
        .any(|f| f.ends_with(".partial")));
}

#[test]
fn a_server_that_ignores_range_is_downloaded_again_from_the_start() {
    let w = world();
    let (data, sha) = w.put_asset(200_000);
    w.mirror.fault_once(ASSET, Fault::CutAfter(50_000));
    w.mirror.fault(ASSET, Fault::IgnoreRange);

    let v = w.fetch_asset(&sha).unwrap();
    assert_eq!(std::fs::read(&v.path).unwrap(), data);
    let reqs = w.mirror.requests_for(ASSET);
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[1].header("range"), Some("bytes=50000-"));
}

#[test]
fn a_complete_partial_answered_416_is_verified_and_published() {
    let w = world();
    let (data, sha) = w.put_asset(10_000);
    std::fs::create_dir_all(w.cache_dir(&sha)).unwrap();
    std::fs::write(w.cache_dir(&sha).join(format!("{NAME}.partial")), &data).unwrap();

    let v = w.fetch_asset(&sha).unwrap();
    assert_eq!(std::fs::read(&v.path).unwrap(), data);
    let reqs = w.mirror.requests_for(ASSET);
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0].header("range"), Some("bytes=10000-"));
}

#[test]
fn a_stale_partial_that_does_not_verify_is_replaced_by_a_fresh_download() {
    let w = world();
    let (data, sha) = w.put_asset(10_000);
    std::fs::create_dir_all(w.cache_dir(&sha)).unwrap();
    // Same length prefix, different bytes: resuming yields a wrong digest.
    std::fs::write(
        w.cache_dir(&sha).join(format!("{NAME}.partial")),
        vec![0u8; 4_000],
    )
    .unwrap();
    let v = w.fetch_asset(&sha).unwrap();
    assert_eq!(std::fs::read(&v.path).unwrap(), data);
    let reqs = w.mirror.requests_for(ASSET);
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0].header("range"), Some("bytes=4000-"));
    assert_eq!(reqs[1].header("range"), None);
}

#[test]
fn checksum_mismatch_is_integrity_and_publishes_nothing() {
    let w = world();
    let data = payload(50_000);
    let wrong = sha256_hex(b"something else");
    let actual = sha256_hex(&data);
    w.mirror.put_bytes(ASSET, data);

    let err = w
        .downloader()
        .fetch_verified(&w.mirror.url(ASSET), &wrong, NAME)
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Integrity);
    assert_eq!(err.exit_code(), 4);
    assert!(err.message.contains(&wrong), "{}", err.message);
    assert!(err.message.contains(&actual), "{}", err.message);
    assert!(err.hint.is_some());
    assert!(!w.cache_dir(&wrong).join(NAME).exists());
    let left = files_in(&w.cache_dir(&wrong));
    assert!(
        !left
            .iter()
            .any(|f| f.contains(NAME) && !f.ends_with(".lock")),
        "{left:?}"
    );
    assert!(!w.cache_dir(&actual).exists());
}

#[test]
fn not_found_fails_at_once_with_url_and_hint() {
    let w = world();
    let url = w.mirror.url(ASSET);
    let err = w
        .downloader()
        .fetch_verified(&url, &sha256_hex(b"x"), NAME)
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Failed);
    assert_eq!(err.message, format!("not found at {url}"));
    assert_eq!(err.http_status(), Some(404));
    let hint = err.hint.unwrap();
    assert!(
        hint.contains("version") && hint.contains("TSBSCTL_GITHUB_URL"),
        "{hint}"
    );
    assert_eq!(w.mirror.requests_for(ASSET).len(), 1, "no retry for 404");
    assert!(!w.cache_dir(&sha256_hex(b"x")).join(NAME).exists());

    let sums = format!("{INFLUXDATA_DL}/influxdb/releases/x.tar.gz.sha256");
    let err = w
        .downloader()
        .fetch_text(&w.mirror.url(&sums), ACCEPT_ARTIFACT)
        .unwrap_err();
    assert_eq!(err.exit_code(), 1);
    assert!(err.message.contains("not found at"), "{}", err.message);
    assert!(err.hint.unwrap().contains("influxdata_dl"));
}

#[test]
fn github_rate_limit_says_set_github_token_or_pass_version() {
    let w = world();
    let latest = format!("{GITHUB_API}/repos/GreptimeTeam/greptimedb/releases/latest");
    w.mirror.fault(&latest, Fault::RateLimited);
    let err = w
        .downloader()
        .fetch_json(&w.mirror.url(&latest), ACCEPT_GITHUB_JSON)
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Failed);
    assert!(err.message.contains("rate limit"), "{}", err.message);
    assert_eq!(err.http_status(), Some(403));
    let hint = err.hint.unwrap();
    assert!(
        hint.contains("GITHUB_TOKEN") && hint.contains("--version"),
        "{hint}"
    );
    assert_eq!(w.mirror.requests_for(&latest).len(), 1, "no retry for 403");

    // A plain 403 elsewhere is not called a rate limit.
    w.mirror.put_bytes(ASSET, b"x".to_vec());
    w.mirror.fault(ASSET, Fault::Status(403));
    let err = w
        .downloader()
        .fetch_verified(&w.mirror.url(ASSET), &sha256_hex(b"x"), NAME)
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Failed);
    assert!(err.message.contains("403"), "{}", err.message);
    assert_eq!(err.http_status(), Some(403));
    assert!(!err.hint.unwrap().contains("GITHUB_TOKEN"));
}

#[test]
fn a_verified_cache_entry_is_reused_without_a_request() {
    let w = world();
    let (_, sha) = w.put_asset(20_000);
    let d = w.downloader();
    let first = d.fetch_verified(&w.mirror.url(ASSET), &sha, NAME).unwrap();
    let n = w.mirror.requests().len();
    let second = d
        .fetch_verified(&w.mirror.url(ASSET), &sha.to_uppercase(), NAME)
        .unwrap();
    assert!(second.cached);
    assert_eq!(second.path, first.path);
    assert_eq!(w.mirror.requests().len(), n, "a cache hit makes no request");

    // A damaged entry is noticed, removed and fetched again.
    std::fs::write(&first.path, b"damaged").unwrap();
    let third = d.fetch_verified(&w.mirror.url(ASSET), &sha, NAME).unwrap();
    assert!(!third.cached);
    assert_eq!(w.mirror.requests().len(), n + 1);
}

#[test]
fn github_token_goes_to_the_api_host_only_and_never_into_errors() {
    let w = world();
    let secret = "ghp_testsecret_0123456789";
    let d = {
        let _g = ENV.lock().unwrap_or_else(|e| e.into_inner());
        std::env::set_var("GITHUB_TOKEN", secret);
        let d = Downloader::new(&w.root, &w.sources, Arc::new(SilentReporter));
        std::env::remove_var("GITHUB_TOKEN");
        d.unwrap().with_retry_base(Duration::from_millis(5))
    };
    let latest = format!("{GITHUB_API}/repos/GreptimeTeam/greptimedb/releases/latest");
    w.mirror
        .put_json(&latest, &serde_json::json!({"tag_name": "v1.2.0"}));
    let data = payload(1000);
    w.mirror.put_bytes(ASSET, data.clone());

    let json = d
        .fetch_json(&w.mirror.url(&latest), ACCEPT_GITHUB_JSON)
        .unwrap();
    assert_eq!(json["tag_name"], "v1.2.0");
    d.fetch_verified(&w.mirror.url(ASSET), &sha256_hex(&data), NAME)
        .unwrap();

    let api = w.mirror.requests_for(&latest);
    assert_eq!(
        api[0].header("authorization"),
        Some(format!("Bearer {secret}").as_str())
    );
    assert_eq!(api[0].header("accept"), Some(ACCEPT_GITHUB_JSON));
    let asset = w.mirror.requests_for(ASSET);
    assert_eq!(asset[0].header("authorization"), None);
    for r in w.mirror.requests() {
        if !r.path.starts_with(GITHUB_API) {
            assert!(r.header("authorization").is_none(), "{r:?}");
        }
    }

    // Errors name URLs, never the token.
    w.mirror.fault(&latest, Fault::RateLimited);
    let e1 = d
        .fetch_json(&w.mirror.url(&latest), ACCEPT_GITHUB_JSON)
        .unwrap_err();
    w.mirror.fault(&latest, Fault::Status(500));
    let e2 = d
        .fetch_json(&w.mirror.url(&latest), ACCEPT_GITHUB_JSON)
        .unwrap_err();
    for e in [e1, e2] {
        let all = format!("{} {:?} {e:?}", e.message, e.hint);
        assert!(!all.contains(secret), "{all}");
    }
}

#[test]
fn server_errors_are_retried_then_succeed_and_give_up_after_the_limit() {
    let w = world();
    let sums = format!("{GITHUB}/o/r/releases/download/v1/{NAME}.sha256sum");
    let digest = sha256_hex(b"archive");
    w.mirror
        .put_text(&sums, &format!("{}\n", digest.to_uppercase()));
    w.mirror.fault_once(&sums, Fault::Status(503));
    w.mirror.fault_once(&sums, Fault::Status(502));
    let text = w
        .downloader()
        .fetch_text(&w.mirror.url(&sums), ACCEPT_ARTIFACT)
        .unwrap();
    assert_eq!(parse_checksum_file(&text, NAME).unwrap(), digest);
    assert_eq!(w.mirror.requests_for(&sums).len(), 3);

    w.mirror.fault(&sums, Fault::Status(500));
    let err = w
        .downloader()
        .fetch_text(&w.mirror.url(&sums), ACCEPT_ARTIFACT)
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Failed);
    assert!(err.message.contains("500"), "{}", err.message);
    assert!(
        err.message
            .contains(&format!("after {DEFAULT_ATTEMPTS} attempts)")),
        "{}",
        err.message
    );
    assert_eq!(
        w.mirror.requests_for(&sums).len(),
        3 + DEFAULT_ATTEMPTS as usize
    );

    // Dropped connections on an archive: retried, and the partial is kept for later.
    let (_, sha) = w.put_asset(5_000);
    w.mirror.fault(ASSET, Fault::Drop);
    let err = w.fetch_asset(&sha).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Failed);
    assert!(err.hint.unwrap().contains("resume"));
    assert_eq!(
        w.mirror.requests_for(ASSET).len(),
        DEFAULT_ATTEMPTS as usize
    );
    w.mirror.clear_faults();
    let v = w.fetch_asset(&sha).unwrap();
    assert!(!v.cached);
}

#[test]
fn file_urls_and_plain_directories_are_read_from_disk() {
    let w = world();
    let mirror_dir = w.root.path().parent().unwrap().join("offline mirror");
    let go = mirror_dir.join("go");
    std::fs::create_dir_all(&go).unwrap();
    let name = "go1.21.13.linux-amd64.tar.gz";
    let data = payload(70_000);
    let sha = sha256_hex(&data);
    std::fs::write(go.join(name), &data).unwrap();
    std::fs::write(
        go.join(format!("{name}.sha256")),
        format!("{sha}  {name}\n"),
    )
    .unwrap();

    // A plain path in config.toml, relative to the root.
    std::fs::write(
        w.root.config_file(),
        "[sources]\ngo_dl = \"../offline mirror/go/\"\n",
    )
    .unwrap();
    let sources = tsbsctl::product::load_sources(&w.root).unwrap();
    assert!(sources.get(SourceKey::GO_DL).starts_with("file:///"));
    let d = Downloader::new(&w.root, &sources, Arc::new(SilentReporter))
        .unwrap()
        .with_github_token(None);
    let text = d
        .fetch_text(
            &sources.url(SourceKey::GO_DL, &format!("{name}.sha256")),
            ACCEPT_ARTIFACT,
        )
        .unwrap();
    let digest = parse_checksum_file(&text, name).unwrap();
    assert_eq!(digest, sha);
    let v = d
        .fetch_verified(&sources.url(SourceKey::GO_DL, name), &digest, name)
        .unwrap();
    assert_eq!(std::fs::read(&v.path).unwrap(), data);
    assert_eq!(v.path, w.cache_dir(&sha).join(name));

    let missing = sources.url(SourceKey::GO_DL, "go9.9.9.linux-amd64.tar.gz");
    let err = d
        .fetch_verified(&missing, &sha256_hex(b"y"), "go9.9.9.linux-amd64.tar.gz")
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Failed);
    assert!(
        err.message.starts_with("not found at file:///"),
        "{}",
        err.message
    );
    assert!(err.hint.unwrap().contains("go_dl"));

    // A file:// URL with a wrong checksum: integrity, nothing kept.
    let file_url = url_of(&go.join(name));
    let wrong = sha256_hex(b"z");
    let err = d.fetch_verified(&file_url, &wrong, name).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Integrity);
    assert!(!w.cache_dir(&wrong).join(name).exists());
    assert!(!w.cache_dir(&wrong).join(format!("{name}.partial")).exists());
    assert!(w.mirror.requests().is_empty());
    let _ = GO_DL;
}

fn url_of(p: &Path) -> String {
    format!(
        "file://{}",
        p.to_string_lossy().replace('%', "%25").replace(' ', "%20")
    )
}

#[test]
fn checksum_files_from_the_mirror_parse() {
    let w = world();
    let d = w.downloader();
    let a = sha256_hex(b"a");
    let b = sha256_hex(b"b");
    let cases: Vec<(String, &str, Result<String, ()>)> = vec![
        (format!("{a}\n"), "x.tar.gz", Ok(a.clone())),
        (a.to_uppercase(), "x.tar.gz", Ok(a.clone())),
        (
            format!("{a}  influxdb3-core-3.11.1_linux_amd64.tar.gz\n"),
            "influxdb3-core-3.11.1_linux_amd64.tar.gz",
            Ok(a.clone()),
        ),
        (
            format!("{a}  one.tar.gz\n{b}  two.tar.gz\n"),
            "two.tar.gz",
            Ok(b.clone()),
        ),
        (format!("{a}  one.tar.gz\n"), "two.tar.gz", Err(())),
        ("<html>oops</html>".into(), "x.tar.gz", Err(())),
        (String::new(), "x.tar.gz", Err(())),
    ];
    for (i, (text, name, want)) in cases.into_iter().enumerate() {
        let path = format!("/sums/{i}");
        w.mirror.put_text(&path, &text);
        let got = d.fetch_text(&w.mirror.url(&path), ACCEPT_ARTIFACT).unwrap();
        match (parse_checksum_file(&got, name), want) {
            (Ok(d), Ok(w)) => assert_eq!(d, w),
            (Err(e), Err(())) => {
                assert_eq!(e.kind, ErrorKind::Integrity, "{text:?}");
                assert!(e.message.contains(name));
            }
            (got, want) => panic!("case {i} {text:?}: got {got:?}, want {want:?}"),
        }
    }
}

#[test]
fn a_file_body_is_streamed_and_slow_bodies_still_complete() {
    let w = world();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("blob");
    let data = payload(40_000);
    std::fs::write(&file, &data).unwrap();
    w.mirror.put(ASSET, Body::File(file));
    w.mirror.fault(
        ASSET,
        Fault::Slow {
            bytes_per_sec: 400_000,
        },
    );
    let v = w
        .downloader()
        .fetch_verified(&w.mirror.url(ASSET), &sha256_hex(&data), NAME)
        .unwrap();
    assert_eq!(std::fs::read(v.path).unwrap(), data);
}

#[test]
fn an_idle_connection_times_out_and_the_download_resumes() {
    let w = world();
    let (data, sha) = w.put_asset(20_000);
    // One byte, then a stall far longer than the idle timeout.
    w.mirror.fault_once(ASSET, Fault::Slow { bytes_per_sec: 1 });
    let v = w
        .downloader()
        .with_timeout(Duration::from_millis(300))
        .unwrap()
        .fetch_verified(&w.mirror.url(ASSET), &sha, NAME)
        .unwrap();
    assert_eq!(std::fs::read(&v.path).unwrap(), data);
    let reqs = w.mirror.requests_for(ASSET);
    assert_eq!(reqs.len(), 2, "{reqs:?}");
    assert_eq!(reqs[1].header("range"), Some("bytes=1-"));
}

#[test]
fn testbed_serve_prints_exports_and_serves_until_sigterm() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let blob = dir.path().join("blob");
    std::fs::write(&blob, b"served from disk").unwrap();
    let mut child = std::process::Command::new(crate::util::testbed_bin())
        .args(["serve", "--dir"])
        .arg(dir.path().join("work"))
        .arg("--file")
        .arg(format!("/extra/blob={}", blob.display()))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let lines: Vec<String> = stdout.lines().take(5).map(|l| l.unwrap()).collect();
    let mut base = None;
    for l in &lines {
        let (k, v) = l.strip_prefix("export ").unwrap().split_once('=').unwrap();
        assert!(k.starts_with("TSBSCTL_"), "{l}");
        let v = v.trim_matches('\'');
        assert!(v.starts_with("http://127.0.0.1:"), "{l}");
        if k == "TSBSCTL_GITHUB_URL" {
            base = Some(v.trim_end_matches("/github.com").to_string());
        }
    }
    let base = base.expect("TSBSCTL_GITHUB_URL is printed");
    let d = Downloader::new(
        &Root::at(dir.path().join("root")),
        &tsbsctl::product::default_sources(),
        Arc::new(SilentReporter),
    )
    .unwrap();
    let text = d
        .fetch_text(&format!("{base}/extra/blob"), ACCEPT_ARTIFACT)
        .unwrap();
    assert_eq!(text, "served from disk");

    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("testbed serve did not stop on SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status:?}");
}

#[test]
fn redirects_are_followed_and_the_token_does_not_follow_them_off_the_api() {
    let w = world();
    let secret = "ghp_redirect_secret";
    let d = w.downloader().with_github_token(Some(secret));
    let data = payload(3000);
    let sha = sha256_hex(&data);
    // GitHub sends release assets to another host; here, another path prefix.
    let object = "/objects.githubusercontent.com/github-production-release-asset/1";
    w.mirror.put_bytes(object, data.clone());
    w.mirror.redirect(ASSET, &w.mirror.url(object));
    let v = d.fetch_verified(&w.mirror.url(ASSET), &sha, NAME).unwrap();
    assert_eq!(std::fs::read(&v.path).unwrap(), data);

    // From the API to elsewhere (a relative Location): the token stays behind.
    let api = format!("{GITHUB_API}/repos/GreptimeTeam/greptimedb/releases/assets/1");
    let text = "/objects.githubusercontent.com/notes.txt";
    w.mirror.put_text(text, "release notes");
    w.mirror.redirect(&api, text);
    assert_eq!(
        d.fetch_text(&w.mirror.url(&api), ACCEPT_ARTIFACT).unwrap(),
        "release notes"
    );

    let seen = w.mirror.requests();
    let auth = |p: &str| {
        seen.iter()
            .filter(|r| r.path == p)
            .map(|r| r.header("authorization").map(str::to_string))
            .collect::<Vec<_>>()
    };
    assert_eq!(auth(ASSET), vec![None]);
    assert_eq!(auth(object), vec![None]);
    assert_eq!(auth(&api), vec![Some(format!("Bearer {secret}"))]);
    assert_eq!(auth(text), vec![None]);
}

/// Keeps every info line.
#[derive(Default)]
struct Recorder(Mutex<Vec<String>>);

impl tsbsctl::output::Reporter for Recorder {
    fn info(&self, m: &str) {
        self.0.lock().unwrap().push(m.to_string());
    }
    fn warn(&self, m: &str) {
        self.0.lock().unwrap().push(m.to_string());
    }
    fn progress(
        &self,
        _: &str,
        _: Option<u64>,
        _: tsbsctl::output::Unit,
    ) -> Box<dyn tsbsctl::output::Progress> {
        Box::new(tsbsctl::output::NoProgress)
    }
}

#[test]
fn a_second_downloader_waits_for_the_first_naming_it_then_reuses_its_file() {
    let w = world();
    let (data, sha) = w.put_asset(20_000);
    // The cache entry's lock, held the way another tsbsctl holds it.
    let lock_path = w.cache_dir(&sha).join(format!(".{NAME}.lock"));
    let held = tsbsctl::lock::lock_file(
        &lock_path,
        "the download",
        "tsbsctl greptimedb install --version 9.9.9",
        &Default::default(),
        &SilentReporter,
    )
    .unwrap();
    let rec = Arc::new(Recorder::default());
    let dl = {
        let _g = ENV.lock().unwrap_or_else(|e| e.into_inner());
        Downloader::new(&w.root, &w.sources, rec.clone())
            .unwrap()
            .with_github_token(None)
    };
    let url = w.mirror.url(ASSET);
    let sha2 = sha.clone();
    let waiter = std::thread::spawn(move || dl.fetch_verified(&url, &sha2, NAME));
    let t0 = std::time::Instant::now();
    while rec.0.lock().unwrap().is_empty() && t0.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let said = rec.0.lock().unwrap().join("\n");
    assert!(said.contains("waiting"), "{said}");
    assert!(
        said.contains("greptimedb install --version 9.9.9"),
        "{said}"
    );
    assert!(!waiter.is_finished());
    // The holder publishes the file and lets go: the waiter finds it and downloads nothing.
    std::fs::write(w.cache_dir(&sha).join(NAME), &data).unwrap();
    drop(held);
    let v = waiter.join().unwrap().unwrap();
    assert_eq!(std::fs::read(&v.path).unwrap(), data);
    assert!(w.mirror.requests_for(ASSET).is_empty());
}
