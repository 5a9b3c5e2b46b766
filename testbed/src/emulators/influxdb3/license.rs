//! Enterprise licence discovery and the simulated trial/home e-mail verification.

use super::cli::ServeConfig;
use super::{log, say, Build, Knobs};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const TARGET: &str = "influxdb3_enterprise::license";
pub const TRIAL_OR_HOME: &str = "trial_or_home_license";
pub const COMMERCIAL: &str = "commercial_license";

/// A start-up failure: the message after `Serve command failed: `.
pub struct Fatal(pub String);

fn lm(msg: &str) -> Fatal {
    Fatal(format!("License management error: {msg}"))
}

/// The licence variable `suffix` (`EMAIL`, `TYPE`, `FILE`) as the emulated version reads it.
fn license_env(build: &Build, suffix: &str) -> Option<String> {
    let get = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let legacy_name = format!("INFLUXDB3_ENTERPRISE_LICENSE_{suffix}");
    if build.at_least(3, 11) {
        if let Some(v) = get(&format!("INFLUXDB3_LICENSE_{suffix}")) {
            return Some(v);
        }
        let v = get(&legacy_name)?;
        log(
            "WARN",
            "influxdb3::commands::serve",
            "deprecated environment variable in use, use INFLUXDB3_LICENSE_* instead",
            &[("name", legacy_name)],
        );
        Some(v)
    } else {
        get(&legacy_name)
    }
}

/// Ensures a licence exists before the server continues starting; may block for the
/// simulated e-mail verification.
pub fn ensure(build: &Build, knobs: &Knobs, cfg: &ServeConfig) -> Result<(), Fatal> {
    let cluster_id = cfg.cluster_id.clone().unwrap_or_default();
    let cluster_dir = cfg.data_dir.as_ref().map(|d| d.join(&cluster_id));

    let file = cfg
        .license_file
        .clone()
        .or_else(|| license_env(build, "FILE").map(PathBuf::from));
    if let Some(path) = file {
        return check_file(&path, &cluster_id, knobs);
    }
    if let Some(dir) = &cluster_dir {
        for name in [COMMERCIAL, TRIAL_OR_HOME] {
            let p = dir.join(name);
            if p.exists() {
                return check_file(&p, &cluster_id, knobs);
            }
        }
    }

    let tty = unsafe { libc::isatty(0) } == 1;
    let email = match cfg
        .license_email
        .clone()
        .or_else(|| license_env(build, "EMAIL"))
    {
        Some(e) => e,
        None if tty => {
            say("Welcome to InfluxDB 3 Enterprise");
            prompt("No license file was detected. Please enter your email: ")?
        }
        None => return Err(lm("No interactive TTY detected. Cannot prompt for email.")),
    };
    let license_type = match cfg
        .license_type
        .clone()
        .or_else(|| license_env(build, "TYPE"))
    {
        Some(t) => t,
        None if tty => prompt("Please enter the license type (trial, home): ")?,
        None => {
            return Err(lm(
                "No interactive TTY detected. Cannot prompt for license type.",
            ))
        }
    };
    match license_type.as_str() {
        "trial" | "home" => {}
        "commercial" => return Err(lm(
            "commercial licenses are issued by InfluxData; pass the license with --license-file",
        )),
        other => return Err(lm(&format!("invalid license type: {other}"))),
    }
    if !email.contains('@') {
        return Err(lm(
            "the license server rejected the email address as invalid",
        ));
    }

    log(
        "INFO",
        TARGET,
        "requesting license",
        &[
            ("email", email.clone()),
            ("license_type", license_type.clone()),
            ("cluster_id", cluster_id.clone()),
        ],
    );
    if let Some(status) = knobs.license_server_status {
        return Err(lm(&format!(
            "license server responded with status {status}: {}",
            if status == 402 {
                "a trial license has already been used and has expired"
            } else {
                "unexpected response"
            }
        )));
    }
    say("Email sent. Please check your inbox to verify your email address and proceed.");
    say("Waiting for verification...");
    if knobs.never_verify {
        loop {
            std::thread::sleep(Duration::from_secs(3600));
        }
    }
    std::thread::sleep(Duration::from_millis(
        knobs.verification_delay_ms.unwrap_or(2000),
    ));

    let jwt = make_license(&email, &license_type, &cluster_id);
    if let Some(dir) = &cluster_dir {
        std::fs::create_dir_all(dir).map_err(|e| lm(&format!("cannot store license: {e}")))?;
        let tmp = dir.join(format!(".{TRIAL_OR_HOME}.tmp"));
        let write = || -> std::io::Result<()> {
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(jwt.as_bytes())?;
            f.sync_all()?;
            std::fs::rename(&tmp, dir.join(TRIAL_OR_HOME))
        };
        write().map_err(|e| lm(&format!("cannot store license: {e}")))?;
    }
    log(
        "INFO",
        TARGET,
        "valid license found, happy data crunching",
        &[("license_type", license_type.clone())],
    );
    Ok(())
}

fn prompt(text: &str) -> Result<String, Fatal> {
    print!("{text}");
    let _ = std::io::stdout().flush();
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|e| lm(&format!("cannot read from terminal: {e}")))?;
    Ok(line.trim_end_matches(['\r', '\n']).to_string())
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs()
}

/// A JWT-shaped licence: the e-mail is only inside the base64url payload.
pub fn make_license(email: &str, license_type: &str, cluster_id: &str) -> String {
    let header = super::b64url(br#"{"alg":"EdDSA","typ":"JWT"}"#);
    let iat = now_secs();
    let days = if license_type == "trial" { 30 } else { 3650 };
    let payload = serde_json::json!({
        "iss": "InfluxData (testbed)",
        "email": email,
        "license_type": license_type,
        "cluster_id": cluster_id,
        "iat": iat,
        "exp": iat + days * 86_400,
    });
    let payload = super::b64url(payload.to_string().as_bytes());
    let sig = super::b64url(&super::hex_digest(&format!("{header}.{payload}")).into_bytes()[..32]);
    format!("{header}.{payload}.{sig}")
}

/// Seconds the licence clock runs ahead (knob `license_clock_offset_days`: a test ages a
/// 30-day trial without waiting).
fn clock_offset(knobs: &Knobs) -> u64 {
    knobs.license_clock_offset_days.unwrap_or(0) * 86_400
}

fn check_file(path: &Path, cluster_id: &str, knobs: &Knobs) -> Result<(), Fatal> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        lm(&format!(
            "unable to read license file {}: {e}",
            path.display()
        ))
    })?;
    let invalid = || lm(&format!("invalid license file {}", path.display()));
    let parts: Vec<&str> = text.trim().split('.').collect();
    if parts.len() != 3 {
        return Err(invalid());
    }
    let payload = super::b64url_decode(parts[1]).ok_or_else(invalid)?;
    let claims: serde_json::Value = serde_json::from_slice(&payload).map_err(|_| invalid())?;
    let expected_sig =
        super::b64url(&super::hex_digest(&format!("{}.{}", parts[0], parts[1])).into_bytes()[..32]);
    if parts[2] != expected_sig {
        return Err(lm("license signature verification failed"));
    }
    if claims["cluster_id"].as_str() != Some(cluster_id) {
        return Err(lm(&format!(
            "the license is not valid for cluster {cluster_id}"
        )));
    }
    if claims["exp"].as_u64().unwrap_or(0) <= now_secs() + clock_offset(knobs) {
        return Err(lm("the license has expired"));
    }
    let kind = claims["license_type"].as_str().unwrap_or("commercial");
    log(
        "INFO",
        TARGET,
        "valid license found, happy data crunching",
        &[("license_type", kind.to_string())],
    );
    if kind == "home" {
        // Inferred wording; the limits are the documented ones (config-options.md).
        log(
            "INFO",
            TARGET,
            "At-Home license: limited to 2 cores, 1 IO thread and 1 DataFusion thread",
            &[],
        );
    }
    Ok(())
}
