//! Stand-in GreptimeDB releases on the mirror: archive shape, checksum files, release
//! objects, and the broken variants.

use std::io::Read;

use serde_json::Value;
use sha2::{Digest, Sha256};
use testbed::mirror::Mirror;
use testbed::releases::greptime::{
    self, archive_path, checksum_path, host_platform, latest_path, tag_path, GreptimeRelease,
    Variant,
};

fn get(mirror: &Mirror, path: &str) -> (u16, Vec<u8>) {
    match ureq::get(&format!("{}{path}", mirror.base_url())).call() {
        Ok(r) => {
            let status = r.status();
            let mut body = Vec::new();
            r.into_reader().read_to_end(&mut body).unwrap();
            (status, body)
        }
        Err(ureq::Error::Status(code, _)) => (code, Vec::new()),
        Err(e) => panic!("{e}"),
    }
}

fn json(mirror: &Mirror, path: &str) -> Value {
    let (code, body) = get(mirror, path);
    assert_eq!(code, 200, "{path}");
    serde_json::from_slice(&body).unwrap()
}

/// (path, entry type, link target) of every member.
fn members(gz: &[u8]) -> Vec<(String, tar::EntryType, Option<String>)> {
    let mut a = tar::Archive::new(flate2::read::GzDecoder::new(gz));
    a.entries()
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.path()
                    .unwrap()
                    .to_string_lossy()
                    .trim_end_matches('/')
                    .to_string(),
                e.header().entry_type(),
                e.link_name()
                    .unwrap()
                    .map(|l| l.to_string_lossy().into_owned()),
            )
        })
        .collect()
}

#[test]
fn good_release_has_the_vendor_shape_and_a_working_binary() {
    let mirror = Mirror::start().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let knobs = tmp.path().join("knobs.json");
    let platform = host_platform();
    let rel = GreptimeRelease::new("v1.2.0").with_knobs(&knobs);
    let digests = greptime::publish(&mirror, &rel);
    assert_eq!(digests.len(), 1);

    let (code, gz) = get(&mirror, &archive_path("1.2.0", &platform));
    assert_eq!(code, 200);
    assert!(archive_path("1.2.0", &platform).ends_with(&format!(
        "/github.com/GreptimeTeam/greptimedb/releases/download/v1.2.0/greptime-{platform}-v1.2.0.tar.gz"
    )));
    let (_, sum) = get(&mirror, &checksum_path("1.2.0", &platform));
    let digest = hex::encode(Sha256::digest(&gz));
    assert_eq!(String::from_utf8(sum).unwrap(), format!("{digest}\n"));
    assert_eq!(digests[0].1, digest);

    let top = format!("greptime-{platform}-v1.2.0");
    let names: Vec<String> = members(&gz).into_iter().map(|m| m.0).collect();
    assert_eq!(names, vec![top.clone(), format!("{top}/greptime")]);

    // Extract and run the binary: it is the emulator at that version, with those knobs.
    tar::Archive::new(flate2::read::GzDecoder::new(&gz[..]))
        .unpack(tmp.path())
        .unwrap();
    let bin = tmp.path().join(&top).join("greptime");
    let run = |arg: &str| {
        let out = std::process::Command::new(&bin)
            .arg(arg)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8(out.stdout).unwrap())
    };
    assert_eq!(run("-V"), (Some(0), "GreptimeDB 1.2.0\n".to_string()));
    std::fs::write(&knobs, r#"{"wrong_version": "1.1.0"}"#).unwrap();
    assert_eq!(run("-V"), (Some(0), "GreptimeDB 1.1.0\n".to_string()));

    let tag = json(&mirror, &tag_path("v1.2.0"));
    assert_eq!(tag["tag_name"], "v1.2.0");
    assert_eq!(tag["prerelease"], false);
    let asset_url = tag["assets"][0]["browser_download_url"].as_str().unwrap();
    assert_eq!(
        asset_url,
        format!("{}{}", mirror.base_url(), archive_path("1.2.0", &platform))
    );
}

#[test]
fn variants_break_one_thing_each() {
    let mirror = Mirror::start().unwrap();
    let p = host_platform();
    let publish = |v: &str, variant: Variant| {
        greptime::publish(&mirror, &GreptimeRelease::new(v).with_variant(variant));
        let (_, gz) = get(&mirror, &archive_path(v, &p));
        let (code, sum) = get(&mirror, &checksum_path(v, &p));
        (gz, code, String::from_utf8(sum).unwrap())
    };
    let (gz, _, sum) = publish("1.0.1", Variant::WrongChecksum);
    assert_ne!(sum.trim(), hex::encode(Sha256::digest(&gz)));
    assert_eq!(sum.trim().len(), 64);
    let (gz, _, sum) = publish("1.0.2", Variant::UppercaseChecksum);
    assert_eq!(sum.trim(), hex::encode(Sha256::digest(&gz)).to_uppercase());
    let (_, code, _) = publish("1.0.3", Variant::MissingChecksum);
    assert_eq!(code, 404);
    let (gz, _, _) = publish("1.0.4", Variant::ExtraTopLevelEntry);
    assert!(members(&gz).iter().any(|m| m.0 == "README.md"));
    let (gz, _, _) = publish("1.0.5", Variant::SymlinkEscape);
    assert!(members(&gz)
        .iter()
        .any(|m| m.1 == tar::EntryType::Symlink && m.2.as_deref().unwrap().starts_with("../")));
    let (gz, _, _) = publish("1.0.6", Variant::HardLink);
    assert!(members(&gz).iter().any(|m| m.1 == tar::EntryType::Link));
    let (gz, _, _) = publish("1.0.7", Variant::MissingBinary);
    assert!(!members(&gz).iter().any(|m| m.0.ends_with("/greptime")));
    let (gz, _, _) = publish("1.0.8", Variant::WrongTopDir);
    assert_eq!(
        members(&gz)[1].0,
        format!("greptime-{p}/greptime"),
        "one top dir, not the vendor's name"
    );
}

#[test]
fn latest_and_publish_all() {
    let mirror = Mirror::start().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    greptime::publish_all(&mirror, tmp.path());
    let latest = json(&mirror, &latest_path());
    assert_eq!(
        (
            latest["tag_name"].clone(),
            latest["draft"].clone(),
            latest["prerelease"].clone()
        ),
        (
            Value::from("v1.2.0"),
            Value::from(false),
            Value::from(false)
        )
    );
    let pre = json(&mirror, &tag_path("v1.3.0-beta.1"));
    assert_eq!(pre["prerelease"], true);
    let p = host_platform();
    for v in ["1.2.0", "1.1.4", "0.17.1", "1.3.0-beta.1"] {
        assert_eq!(get(&mirror, &archive_path(v, &p)).0, 200, "{v}");
        assert_eq!(get(&mirror, &checksum_path(v, &p)).0, 200, "{v}");
    }
    // A broken API answer: the latest release is a prerelease.
    greptime::publish_latest(&mirror, "v1.3.0-beta.1", false, true);
    assert_eq!(json(&mirror, &latest_path())["prerelease"], true);
}
