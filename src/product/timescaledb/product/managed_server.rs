//! TimescaleDB's [`ManagedServer`]: how its managed server is started, watched and reached.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::{endpoint_port, on_thread, read_record, target_of, TimescaleDb, ADMIN_DB};
use crate::error::{Error, Result};
use crate::product::timescaledb::server::{Layout, RunAs};
use crate::product::timescaledb::sql::Target;
use crate::product::timescaledb::{log, server as pg, sql};
use crate::product::{ManagedServer, ServerCommand, CONFIG_FILE};
use crate::server::{Probe, Timing};
use crate::workspace_manifest::WorkspaceManifest;

impl ManagedServer for TimescaleDb {
    /// `postgres://postgres@127.0.0.1:PORT/DB`: what `psql` and the TSBS tools connect to.
    fn local_endpoint(&self, port: u16, database: &str) -> String {
        Target::local(port, database).display()
    }
    /// `postgres -D data` in the foreground as the server's user; the checked workspace
    /// config is installed again first (so the file the server reads is the one verified), and
    /// a `postmaster.pid` no process holds is removed.
    fn server_command(
        &self,
        _ws: &WorkspaceManifest,
        dir: &Path,
        install_dir: &Path,
    ) -> Result<ServerCommand> {
        let inst = read_record(install_dir)?;
        let run_as = RunAs::detect();
        let layout = Layout::in_dir(dir);
        pg::clear_stale_pid(&layout.data_dir)?;
        pg::clear_stale_socket_locks(&layout.socket_dir)?;
        // Sockets: recreated when missing (the workspace dir may have been restored).
        pg::prepare_dirs(&layout, &run_as)?;
        let cfg = dir.join(CONFIG_FILE);
        let text = fs_err::read_to_string(&cfg)?;
        pg::install_config(&layout.data_dir, &text, &run_as)?;
        Ok(pg::server_command(
            &inst,
            &layout,
            &run_as,
            &pg::config_assignments(&text),
        ))
    }
    /// PostgreSQL's log: FATAL ends a session, only PANIC or a dead server process fails.
    fn log_rules(&self) -> crate::logscan::LogRules {
        log::RULES
    }
    fn failure_lines(&self) -> Option<fn(&str) -> Vec<String>> {
        Some(log::fatal_lines)
    }
    /// Without the installation: `pg_isready` from PATH.
    fn readiness_probe(&self, endpoint: &str) -> Probe {
        let port = endpoint_port(endpoint).unwrap_or(5432);
        Probe::Command {
            program: PathBuf::from("pg_isready"),
            args: vec![
                "-h".into(),
                "127.0.0.1".into(),
                "-p".into(),
                port.to_string(),
                "-U".into(),
                pg::SUPERUSER.into(),
            ],
            gate: None,
        }
    }
    /// `pg_isready` of the installation, asked only once `postmaster.pid` says `ready`: a
    /// connection during startup or WAL replay is refused with a FATAL line in the log.
    fn readiness_probe_for(
        &self,
        endpoint: &str,
        install_dir: &Path,
        workspace_dir: &Path,
    ) -> Probe {
        match (read_record(install_dir), endpoint_port(endpoint)) {
            (Ok(inst), Ok(port)) => {
                let c = pg::pg_isready_command(&inst, port);
                Probe::Command {
                    program: c.program,
                    args: c.args,
                    gate: Some(pg::ready_gate(&Layout::in_dir(workspace_dir).data_dir)),
                }
            }
            _ => self.readiness_probe(endpoint),
        }
    }
    /// The settings in force are the workspace's (N1): each setting of its file must come from
    /// the command line tsbsctl gave (so nothing in `postgresql.conf` after the include, nor
    /// `postgresql.auto.conf`, won), no `ALTER DATABASE/ROLE ... SET` may change one for the
    /// benchmark's sessions, and the postmaster must listen on 127.0.0.1 only. Exit 4 naming
    /// every difference; else the settings as read, with their source, for the run.
    fn check_serving(
        &self,
        ws: &WorkspaceManifest,
        ws_dir: &Path,
        endpoint: &str,
        pid: u32,
    ) -> Result<Option<Value>> {
        let cfg = ws_dir.join(CONFIG_FILE);
        let text = fs_err::read_to_string(&cfg)?;
        let want = pg::config_assignments(&text);
        let mut names: Vec<String> = want.iter().map(|(n, _)| n.clone()).collect();
        names.extend(sql::REPORTED_SETTINGS.iter().map(|s| s.to_string()));
        // What the person set in the cluster's own files is recorded as in force too.
        let outside = pg::outside_settings(&Layout::in_dir(ws_dir).data_dir, &want)?;
        names.extend(outside.into_iter().map(|s| s.name.to_lowercase()));
        names.sort();
        names.dedup();
        let admin = target_of(endpoint)?.with_db(ADMIN_DB);
        let (db, q_names) = (ws.database.clone(), names.clone());
        let (in_force, overrides) = on_thread(move || {
            let mut c = sql::connect(&admin, sql::TIMEOUT)?;
            let f = sql::settings_in_force(&mut c, &q_names)?;
            let o = sql::db_role_overrides(&mut c, &q_names, &db, pg::SUPERUSER)?;
            Ok((f, o))
        })?;
        let mut wrong = Vec::new();
        for (name, value) in &want {
            match in_force.get(&name.to_lowercase()) {
                Some(f) if f.source == "command line" => {}
                // A placeholder's source is not kept: its value must be the workspace's.
                Some(f) if f.source == sql::PLACEHOLDER && &f.value == value => {}
                Some(f) => wrong.push(format!(
                    "{name} = {} from the {}, not the workspace's {value}",
                    f.value, f.source
                )),
                None => wrong.push(format!("{name} is not in pg_settings")),
            }
        }
        for o in &overrides {
            wrong.push(format!("{o} changes a workspace setting"));
        }
        let listening = crate::proc::tcp_listeners(pid).ok();
        if let Some(l) = &listening {
            let open: Vec<String> = l
                .iter()
                .filter(|a| a.ip() != std::net::Ipv4Addr::LOCALHOST)
                .map(|a| a.to_string())
                .collect();
            if !open.is_empty() {
                wrong.push(format!(
                    "the server listens on {} (only 127.0.0.1 is allowed)",
                    open.join(", ")
                ));
            }
        }
        if !wrong.is_empty() {
            return Err(Error::integrity(format!(
                "PostgreSQL of workspace {} runs with settings that are not the workspace's: {}",
                ws.database_id,
                wrong.join("; ")
            ))
            .with_hint(
                "remove them (`ALTER DATABASE ... RESET name`, `ALTER ROLE ... RESET name`, or the lines in the data directory's postgresql.conf or postgresql.auto.conf), or prepare a new workspace",
            ));
        }
        Ok(Some(json!({
            "effective": in_force,
            "effective_source": "pg_settings, read once the server answered",
            "listening": listening.map(|l| l.iter().map(|a| a.to_string()).collect::<Vec<_>>()),
        })))
    }
    /// SIGINT is PostgreSQL's fast shutdown (SIGTERM waits for every client to leave).
    fn default_timing(&self) -> Timing {
        Timing {
            startup_timeout: std::time::Duration::from_secs(120),
            grace: std::time::Duration::from_secs(60),
            stop_signal: nix::sys::signal::Signal::SIGINT,
            startup_wait: Some("it replays its WAL after an unclean stop"),
            ..Timing::default()
        }
    }
}
