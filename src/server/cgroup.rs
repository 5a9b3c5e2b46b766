//! The machine shape a managed server runs in: a cgroup of its own with CPU and memory limits
//! (`--cpus N`, `--memory SIZE`), so that a published shape (8 vCPU / 16 GB) can be reproduced
//! on a larger host and an out-of-memory kill can happen where it happened there.
//!
//! The group is created beneath the cgroup tsbsctl itself runs in, never at a hierarchy's
//! root, so every limit a parent sets still holds and a delegated subtree works. The server
//! joins it between fork and exec (its threads and children follow), and the group is removed
//! once the server is gone; a group left by a killed tsbsctl (named after its pid) is swept by
//! the next tsbsctl command. Where no group can be made (not root, no controller, cgroup v2
//! without a delegated subtree of tsbsctl's own), the command exits 2 with the reason before
//! anything starts: a shape is never pretended.
//!
//! cgroup v1 (`cpu.cfs_quota_us`, `cpuset.cpus`, `memory.limit_in_bytes`) and v2 (`cpu.max`,
//! `cpuset.cpus`, `memory.max`) are both written. On v2 tsbsctl first moves itself into a leaf
//! of its own (see [`V2Layout`]); that ordering is tested on a real v2 hierarchy with a
//! stand-in controller, the v2 limit files only from source (this machine and CI bind cpu,
//! cpuset and memory to v1).

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// What `--cpus` and `--memory` asked for.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Shape {
    /// CPUs: a quota of this many CPUs' time, on the first `ceil(cpus)` CPUs tsbsctl may use.
    pub cpus: Option<f64>,
    /// Memory limit in bytes (swap included where the kernel accounts it).
    pub memory_bytes: Option<u64>,
}

impl Shape {
    pub fn is_empty(&self) -> bool {
        self.cpus.is_none() && self.memory_bytes.is_none()
    }
}

/// The CFS period the quota is a share of (the kernel's default).
const PERIOD_US: u64 = 100_000;
/// Below this a server cannot even start; refused as a mistake.
const MIN_MEMORY: u64 = 64 << 20;
/// Groups this tsbsctl makes: `tsbsctl-<pid>-<n>`.
const PREFIX: &str = "tsbsctl-";

/// One cgroup hierarchy as this process sees it.
#[derive(Debug, Clone, PartialEq)]
struct Hierarchy {
    /// v1: the controllers mounted there; v2: empty (controllers are per group).
    controllers: Vec<String>,
    v2: bool,
    /// Where tsbsctl's own group of this hierarchy is in the file system.
    own: PathBuf,
}

/// The cgroup hierarchies of this process, from `/proc/self/mountinfo` and `/proc/self/cgroup`.
fn hierarchies(mountinfo: &str, cgroup: &str) -> Vec<Hierarchy> {
    let mut out = Vec::new();
    for line in mountinfo.lines() {
        // id parent major:minor root mountpoint options [optional...] - fstype source super
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let f: Vec<&str> = left.split(' ').collect();
        let r: Vec<&str> = right.split(' ').collect();
        if f.len() < 5 || r.len() < 3 {
            continue;
        }
        let (root, mount) = (unescape(f[3]), unescape(f[4]));
        let (fstype, sup) = (r[0], r[2]);
        let (v2, controllers): (bool, Vec<String>) = match fstype {
            "cgroup2" => (true, Vec::new()),
            "cgroup" => (
                false,
                sup.split(',')
                    .filter(|o| ["cpu", "cpuset", "memory", "cpuacct"].contains(o))
                    .map(String::from)
                    .collect(),
            ),
            _ => continue,
        };
        if !v2 && controllers.is_empty() {
            continue;
        }
        // Our group's path in this hierarchy, relative to the mount's root.
        let own_path = cgroup.lines().find_map(|l| {
            let mut p = l.splitn(3, ':');
            let (_, ctrls, path) = (p.next()?, p.next()?, p.next()?);
            let ok = if v2 {
                ctrls.is_empty()
            } else {
                ctrls.split(',').any(|c| controllers.iter().any(|x| x == c))
            };
            ok.then(|| path.to_string())
        });
        let Some(own_path) = own_path else { continue };
        let rel = if root == "/" {
            own_path.as_str()
        } else {
            own_path.strip_prefix(root.as_str()).unwrap_or("/")
        };
        out.push(Hierarchy {
            controllers,
            v2,
            own: outside_our_leaf(Path::new(&mount).join(rel.trim_start_matches('/'))),
        });
    }
    out
}

/// mountinfo escapes space, tab, newline and backslash as octal.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() {
            if let Ok(n) = u8::from_str_radix(&s[i + 1..i + 4], 8) {
                out.push(n);
                i += 4;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A CPU list (`0-3,8`) as CPU numbers.
fn parse_cpu_list(s: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.parse::<u32>(), b.parse::<u32>()) {
                    out.extend(a..=b);
                }
            }
            None => out.extend(part.parse::<u32>().ok()),
        }
    }
    out
}

fn cpu_list(cpus: &[u32]) -> String {
    cpus.iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

fn read(p: &Path) -> Option<String> {
    std::fs::read_to_string(p)
        .ok()
        .map(|s| s.trim().to_string())
}

fn write(p: &Path, v: &str) -> Result<()> {
    std::fs::write(p, v).map_err(|e| {
        Error::invalid(format!("cannot set {} to {v}: {e}", p.display()))
            .with_hint("the cgroup refused the limit; a parent group may allow less")
    })
}

/// The group one server runs in, with what was set.
#[derive(Debug)]
pub struct Cgroup {
    /// One directory per hierarchy used (v1: cpu, cpuset, memory; v2: one).
    dirs: Vec<PathBuf>,
    /// The `cgroup.procs` files the server joins (v1: one per directory).
    procs: Vec<CString>,
    memory_dir: Option<PathBuf>,
    v2: bool,
    /// This group holds a use of the process's [`V2Layout`].
    v2_held: bool,
    pub record: Record,
}

/// What a run records of its server's shape.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Record {
    pub hierarchy: String,
    pub groups: Vec<PathBuf>,
    pub cpus: Option<f64>,
    /// The CPUs the server may run on.
    pub cpuset: Option<String>,
    /// The CPU time quota per period, in microseconds.
    pub cpu_quota_us: Option<u64>,
    pub cpu_period_us: Option<u64>,
    /// The limit as the kernel holds it (rounded to its page size).
    pub memory_limit_bytes: Option<u64>,
    /// Swap is held to the same limit (v1 `memory.memsw`, v2 `memory.swap.max` = 0).
    pub swap_limited: Option<bool>,
}

impl Record {
    /// "1 CPU(s) on 0 and 512.0 MiB of memory, swap included (its own cgroup v1 group)".
    pub fn words(&self) -> String {
        let mut parts = Vec::new();
        if let Some(c) = self.cpus {
            parts.push(format!(
                "{c} CPU(s){}",
                self.cpuset
                    .as_deref()
                    .map(|s| format!(" on {s}"))
                    .unwrap_or_default()
            ));
        }
        if let Some(m) = self.memory_limit_bytes {
            parts.push(format!(
                "{} of memory{}",
                crate::diskspace::human(m),
                if self.swap_limited == Some(true) {
                    ", swap included"
                } else {
                    ""
                }
            ));
        }
        format!("{} (its own {} group)", parts.join(" and "), self.hierarchy)
    }
}

/// What can go: checks that a group of `shape` can be made here, without making one. On
/// cgroup v2 the steps that only the kernel can judge (moving tsbsctl into its leaf, enabling
/// the controllers for the children) are tried and undone, so that a refusal is bad input
/// (exit 2) before anything of a run is written, not a failure at server start.
pub fn check(shape: &Shape) -> Result<()> {
    let (chosen, _) = plan(shape)?;
    for h in chosen.iter().filter(|h| h.v2) {
        let held = LAYOUT.lock().unwrap_or_else(|e| e.into_inner());
        if held.is_none() {
            let pid = std::process::id();
            let layout = v2_enter(&h.own, &v2_controllers(shape), pid)?;
            v2_leave(&layout, pid);
        }
    }
    Ok(())
}

/// The controllers a v2 group of `shape` needs.
fn v2_controllers(shape: &Shape) -> Vec<&'static str> {
    let mut c = Vec::new();
    if shape.cpus.is_some() {
        c.extend(["cpu", "cpuset"]);
    }
    if shape.memory_bytes.is_some() {
        c.push("memory");
    }
    c
}

/// cgroup v2's "no internal processes" rule: a non-root group hands controllers to its
/// children (`cgroup.subtree_control`) only while it holds no process itself, and tsbsctl runs
/// in the group it creates the server's beneath. So, as the kernel's cgroup-v2 documentation
/// and systemd's delegation guide ("move your main process into a sub-cgroup first") say,
/// tsbsctl first moves itself into a leaf of its own, `<own>/tsbsctl-<pid>`, then enables the
/// controllers in `<own>`, and creates the server's group `<own>/tsbsctl-<pid>-<n>` beside
/// its leaf. Undone when the last server group of the process goes ([`v2_leave`]); after a
/// kill -9 the sweep removes both directories (both are named after the dead pid).
#[derive(Debug, Clone, PartialEq)]
struct V2Layout {
    own: PathBuf,
    leaf: PathBuf,
    /// What this process turned on in `<own>/cgroup.subtree_control` (and turns off again).
    enabled: Vec<String>,
}

/// The v2 layout this process has entered, and how many server groups use it.
static LAYOUT: std::sync::Mutex<Option<(V2Layout, usize)>> = std::sync::Mutex::new(None);

/// The leaf tsbsctl (`pid`) moves into under `own`.
fn v2_leaf(own: &Path, pid: u32) -> PathBuf {
    own.join(format!("{PREFIX}{pid}"))
}

/// What [`v2_enter`] will need, read without writing anything: the controllers offered, the
/// files writable, and no process but `pid` in `own` (another one would stay in `own` and the
/// kernel would refuse the controllers).
fn v2_precheck(own: &Path, controllers: &[&str], pid: u32) -> Result<()> {
    let offered = read(&own.join("cgroup.controllers")).unwrap_or_default();
    let lacking: Vec<&str> = controllers
        .iter()
        .copied()
        .filter(|w| !offered.split_whitespace().any(|c| c == *w))
        .collect();
    if !lacking.is_empty() {
        return Err(Error::invalid(format!(
            "--cpus/--memory need the cgroup v2 controller(s) {} in {}, which offers only \"{offered}\"",
            lacking.join(", "),
            own.display()
        ))
        .with_hint("run tsbsctl in a delegated cgroup (for example `systemd-run --scope -p Delegate=yes tsbsctl ...`), or leave out --cpus and --memory"));
    }
    for f in [
        own.to_path_buf(),
        own.join("cgroup.procs"),
        own.join("cgroup.subtree_control"),
    ] {
        if !writable(&f) {
            return Err(Error::invalid(format!(
                "--cpus/--memory need a cgroup of the server's own under {}, and this user may not write {}",
                own.display(),
                f.display()
            ))
            .with_hint("run as root, or in a cgroup subtree delegated to this user (`systemd-run --user --scope -p Delegate=yes tsbsctl ...`); or leave out --cpus and --memory"));
        }
    }
    let others: Vec<u32> = read(&own.join("cgroup.procs"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .filter(|p| *p != pid)
        .collect();
    // The root group (no `cgroup.type`) is exempt from the rule.
    let is_root = !own.join("cgroup.type").exists();
    if !others.is_empty() && !is_root {
        let shown: Vec<String> = others.iter().take(5).map(u32::to_string).collect();
        return Err(Error::invalid(format!(
            "--cpus/--memory: tsbsctl's cgroup {} also holds {} other process(es) ({}{}), and cgroup v2 gives controllers to a group's children only once no process is left in it",
            own.display(),
            others.len(),
            shown.join(", "),
            if others.len() > 5 { ", ..." } else { "" }
        ))
        .with_hint("run tsbsctl in a cgroup of its own, for example `systemd-run --scope -p Delegate=yes tsbsctl ...` (`--user` as a normal user); or leave out --cpus and --memory"));
    }
    Ok(())
}

/// Moves `pid` into its leaf under `own` and enables `controllers` for `own`'s children, in
/// that order (see [`V2Layout`]). A refusal undoes what was done and is bad input (exit 2).
fn v2_enter(own: &Path, controllers: &[&str], pid: u32) -> Result<V2Layout> {
    v2_precheck(own, controllers, pid)?;
    let leaf = v2_leaf(own, pid);
    let refused = |what: String, e: std::io::Error| {
        Error::invalid(format!("--cpus/--memory: cannot {what}: {e}")).with_hint(
            "run tsbsctl in a cgroup of its own with the controllers delegated (`systemd-run --scope -p Delegate=yes tsbsctl ...`); or leave out --cpus and --memory",
        )
    };
    match std::fs::create_dir(&leaf) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => {
            return Err(refused(
                format!("create tsbsctl's own leaf group {}", leaf.display()),
                e,
            ))
        }
    }
    let mut layout = V2Layout {
        own: own.to_path_buf(),
        leaf: leaf.clone(),
        enabled: Vec::new(),
    };
    if let Err(e) = std::fs::write(leaf.join("cgroup.procs"), pid.to_string()) {
        let _ = std::fs::remove_dir(&leaf);
        return Err(refused(format!("move tsbsctl into {}", leaf.display()), e));
    }
    let on = read(&own.join("cgroup.subtree_control")).unwrap_or_default();
    let missing: Vec<&str> = controllers
        .iter()
        .copied()
        .filter(|c| !on.split_whitespace().any(|x| x == *c))
        .collect();
    if !missing.is_empty() {
        let words: Vec<String> = missing.iter().map(|c| format!("+{c}")).collect();
        if let Err(e) = std::fs::write(own.join("cgroup.subtree_control"), words.join(" ")) {
            v2_leave(&layout, pid);
            return Err(refused(
                format!(
                    "enable {} for the groups under {}",
                    words.join(" "),
                    own.display()
                ),
                e,
            ));
        }
        layout.enabled = missing.iter().map(|c| c.to_string()).collect();
    }
    Ok(layout)
}

/// Undoes [`v2_enter`] once no server group of ours is left: the controllers this process
/// enabled off, `pid` back into `own`, the leaf removed. Best effort: what fails is left for
/// the sweep.
fn v2_leave(layout: &V2Layout, pid: u32) {
    if !layout.enabled.is_empty() {
        let words: Vec<String> = layout.enabled.iter().map(|c| format!("-{c}")).collect();
        let _ = std::fs::write(layout.own.join("cgroup.subtree_control"), words.join(" "));
    }
    if std::fs::write(layout.own.join("cgroup.procs"), pid.to_string()).is_ok() {
        let _ = std::fs::remove_dir(&layout.leaf);
    }
}

/// Enters the v2 layout under `own` for one more server group (the first enters it).
fn acquire_layout(own: &Path, controllers: &[&str]) -> Result<()> {
    let mut held = LAYOUT.lock().unwrap_or_else(|e| e.into_inner());
    match held.as_mut() {
        Some((l, n)) if l.own == own => {
            // Controllers a later shape needs that the first did not.
            let more = v2_enter(own, controllers, std::process::id())?;
            for c in more.enabled {
                if !l.enabled.contains(&c) {
                    l.enabled.push(c);
                }
            }
            *n += 1;
        }
        Some((l, _)) => {
            return Err(Error::failed(format!(
                "a server group is already laid out under {}, not {}",
                l.own.display(),
                own.display()
            )))
        }
        None => *held = Some((v2_enter(own, controllers, std::process::id())?, 1)),
    }
    Ok(())
}

/// One server group fewer; the last one's going undoes the layout.
fn release_layout() {
    let mut held = LAYOUT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((l, n)) = held.as_mut() {
        *n -= 1;
        if *n == 0 {
            v2_leave(l, std::process::id());
            *held = None;
        }
    }
}

/// tsbsctl's own group with its v2 leaf taken off: once moved into `<own>/tsbsctl-<pid>`,
/// `/proc/self/cgroup` names the leaf, and the groups still belong beside it.
fn outside_our_leaf(own: PathBuf) -> PathBuf {
    let ours = format!("{PREFIX}{}", std::process::id());
    match (own.file_name(), own.parent()) {
        (Some(n), Some(parent)) if n.to_str() == Some(ours.as_str()) => parent.to_path_buf(),
        _ => own,
    }
}

/// The hierarchies and values a group of `shape` needs, or why it cannot be had.
/// The CPUs a group may run on and its CPU-time quota per period (µs).
type CpuPlan = (Vec<u32>, u64);

fn plan(shape: &Shape) -> Result<(Vec<Hierarchy>, Option<CpuPlan>)> {
    if let Some(c) = shape.cpus {
        if !(c.is_finite() && c > 0.0) {
            return Err(Error::invalid(format!(
                "--cpus {c}: give a number of CPUs above 0"
            )));
        }
    }
    if let Some(m) = shape.memory_bytes {
        if m < MIN_MEMORY {
            return Err(Error::invalid(format!(
                "--memory {m} bytes is below 64 MiB, too little for any server"
            ))
            .with_hint("give a size such as 16GiB or 512MiB"));
        }
    }
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let cgroup = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let all = hierarchies(&mountinfo, &cgroup);
    let mut wanted: Vec<&str> = Vec::new();
    if shape.cpus.is_some() {
        wanted.extend(["cpu", "cpuset"]);
    }
    if shape.memory_bytes.is_some() {
        wanted.push("memory");
    }
    let v1: Vec<&Hierarchy> = all.iter().filter(|h| !h.v2).collect();
    let mut chosen: Vec<Hierarchy> = Vec::new();
    let mut missing = Vec::new();
    for w in &wanted {
        match v1.iter().find(|h| h.controllers.iter().any(|c| c == w)) {
            Some(h) if !chosen.contains(h) => chosen.push((*h).clone()),
            Some(_) => {}
            None => missing.push(*w),
        }
    }
    if !missing.is_empty() {
        // Not (all) on v1: the unified hierarchy must offer them to our group's children.
        let Some(h) = all.iter().find(|h| h.v2) else {
            return Err(Error::invalid(format!(
                "--cpus/--memory need the cgroup controller(s) {} and this host mounts none",
                missing.join(", ")
            ))
            .with_hint("run on a host with cgroups (Linux with cgroup v1 or v2 mounted), or leave out --cpus and --memory"));
        };
        chosen = vec![h.clone()];
    }
    for h in chosen.iter().filter(|h| h.v2) {
        v2_precheck(&h.own, &v2_controllers(shape), std::process::id())?;
    }
    for h in &chosen {
        if !writable(&h.own) {
            return Err(Error::invalid(format!(
                "--cpus/--memory need a cgroup of the server's own under {}, and this user may not create one there",
                h.own.display()
            ))
            .with_hint("run as root, or in a cgroup subtree delegated to this user; or leave out --cpus and --memory"));
        }
    }
    let cpus = match shape.cpus {
        None => None,
        Some(c) => {
            let allowed = allowed_cpus(&chosen);
            let n = c.ceil() as usize;
            if n > allowed.len() {
                return Err(Error::invalid(format!(
                    "--cpus {c}: tsbsctl may use only {} CPU(s) here ({})",
                    allowed.len(),
                    cpu_list(&allowed)
                ))
                .with_hint("ask for at most that many, or run on a larger host"));
            }
            Some((allowed[..n].to_vec(), (c * PERIOD_US as f64).round() as u64))
        }
    };
    if let (Some(m), Some(total)) = (shape.memory_bytes, host_memory()) {
        if m > total {
            return Err(Error::invalid(format!(
                "--memory {m} bytes is more than this host has ({total} bytes)"
            ))
            .with_hint("a limit above the host's memory shapes nothing; ask for less"));
        }
    }
    Ok((chosen, cpus))
}

fn writable(dir: &Path) -> bool {
    let Ok(c) = CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: access(2) on a valid C string.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}

/// The CPUs tsbsctl's own group may run on (its cpuset), else every online CPU.
fn allowed_cpus(chosen: &[Hierarchy]) -> Vec<u32> {
    for h in chosen {
        if h.v2 || h.controllers.iter().any(|c| c == "cpuset") {
            for f in [
                "cpuset.effective_cpus",
                "cpuset.cpus.effective",
                "cpuset.cpus",
            ] {
                if let Some(s) = read(&h.own.join(f)).filter(|s| !s.is_empty()) {
                    return parse_cpu_list(&s);
                }
            }
        }
    }
    read(Path::new("/sys/devices/system/cpu/online"))
        .map(|s| parse_cpu_list(&s))
        .unwrap_or_default()
}

fn host_memory() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib: u64 = s
        .lines()
        .find(|l| l.starts_with("MemTotal:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(kib * 1024)
}

impl Cgroup {
    /// Makes the group `tsbsctl-<our pid>-<n>` of `shape` (after sweeping groups of dead
    /// tsbsctl processes).
    pub fn create(shape: &Shape, n: u32) -> Result<Cgroup> {
        let (chosen, cpus) = plan(shape)?;
        let name = format!("{PREFIX}{}-{n}", std::process::id());
        let v2 = chosen.iter().any(|h| h.v2);
        let mut cg = Cgroup {
            dirs: Vec::new(),
            procs: Vec::new(),
            memory_dir: None,
            v2,
            v2_held: false,
            record: Record {
                hierarchy: if v2 { "cgroup v2" } else { "cgroup v1" }.into(),
                groups: Vec::new(),
                cpus: shape.cpus,
                cpuset: None,
                cpu_quota_us: None,
                cpu_period_us: None,
                memory_limit_bytes: None,
                swap_limited: None,
            },
        };
        for h in &chosen {
            sweep_in(&h.own);
            if h.v2 {
                acquire_layout(&h.own, &v2_controllers(shape))?;
                cg.v2_held = true;
            }
            let dir = h.own.join(&name);
            match std::fs::create_dir(&dir) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => {
                    cg.remove();
                    return Err(Error::invalid(format!(
                        "cannot create the server's cgroup {}: {e}",
                        dir.display()
                    ))
                    .with_hint("run as root or in a delegated cgroup subtree; or leave out --cpus and --memory"));
                }
            }
            cg.dirs.push(dir.clone());
            cg.record.groups.push(dir.clone());
            if let Err(e) = cg.configure(h, &dir, shape, cpus.as_ref()) {
                cg.remove();
                return Err(e);
            }
            if let Ok(c) = CString::new(dir.join("cgroup.procs").as_os_str().as_bytes()) {
                cg.procs.push(c);
            }
        }
        Ok(cg)
    }

    fn configure(
        &mut self,
        h: &Hierarchy,
        dir: &Path,
        shape: &Shape,
        cpus: Option<&CpuPlan>,
    ) -> Result<()> {
        let has = |c: &str| h.v2 || h.controllers.iter().any(|x| x == c);
        if let Some((list, quota)) = cpus {
            if has("cpuset") {
                let parent = h.own.as_path();
                if !h.v2 {
                    // v1: a cpuset group takes no task before its CPUs and memory nodes are set.
                    let mems = read(&parent.join("cpuset.mems")).unwrap_or_default();
                    write(&dir.join("cpuset.mems"), &mems)?;
                }
                write(&dir.join("cpuset.cpus"), &cpu_list(list))?;
                self.record.cpuset = read(&dir.join("cpuset.cpus"));
            }
            if has("cpu") {
                if h.v2 {
                    write(&dir.join("cpu.max"), &format!("{quota} {PERIOD_US}"))?;
                } else {
                    write(&dir.join("cpu.cfs_period_us"), &PERIOD_US.to_string())?;
                    write(&dir.join("cpu.cfs_quota_us"), &quota.to_string())?;
                }
                self.record.cpu_quota_us = Some(*quota);
                self.record.cpu_period_us = Some(PERIOD_US);
            }
        }
        if let Some(m) = shape.memory_bytes {
            if has("memory") {
                if h.v2 {
                    write(&dir.join("memory.max"), &m.to_string())?;
                    self.record.memory_limit_bytes =
                        read(&dir.join("memory.max")).and_then(|s| s.parse().ok());
                    let swap = dir.join("memory.swap.max");
                    self.record.swap_limited = Some(swap.exists() && write(&swap, "0").is_ok());
                } else {
                    write(&dir.join("memory.limit_in_bytes"), &m.to_string())?;
                    self.record.memory_limit_bytes =
                        read(&dir.join("memory.limit_in_bytes")).and_then(|s| s.parse().ok());
                    // A VM of that size has no more memory in swap either.
                    let sw = dir.join("memory.memsw.limit_in_bytes");
                    self.record.swap_limited =
                        Some(sw.exists() && write(&sw, &m.to_string()).is_ok());
                }
                self.memory_dir = Some(dir.to_path_buf());
            }
        }
        Ok(())
    }

    /// Moves the calling process into the group. Only for the child between fork and exec:
    /// open(2), write(2) and close(2), nothing that allocates.
    pub fn joiner(&self) -> impl Fn() -> std::io::Result<()> + Send + Sync + 'static {
        let procs = self.procs.clone();
        move || {
            for p in &procs {
                // SAFETY: async-signal-safe calls on C strings prepared before the fork.
                unsafe {
                    let fd = libc::open(p.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                    if fd < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    // "0": the writing process itself.
                    let ok = libc::write(fd, b"0".as_ptr().cast(), 1) == 1;
                    let err = std::io::Error::last_os_error();
                    libc::close(fd);
                    if !ok {
                        return Err(err);
                    }
                }
            }
            Ok(())
        }
    }

    /// How many times the kernel's OOM killer killed a process of the group (v1
    /// `memory.oom_control` `oom_kill`, v2 `memory.events` `oom_kill`); `None` without a
    /// memory limit or a kernel that does not count.
    pub fn oom_kills(&self) -> Option<u64> {
        let dir = self.memory_dir.as_ref()?;
        let f = if self.v2 {
            "memory.events"
        } else {
            "memory.oom_control"
        };
        let s = std::fs::read_to_string(dir.join(f)).ok()?;
        s.lines().find_map(|l| {
            let (k, v) = l.split_once(' ')?;
            (k == "oom_kill").then(|| v.trim().parse().ok()).flatten()
        })
    }

    /// The group's peak memory use (v1 `memory.max_usage_in_bytes`, v2 `memory.peak`).
    pub fn peak_memory(&self) -> Option<u64> {
        let dir = self.memory_dir.as_ref()?;
        let f = if self.v2 {
            "memory.peak"
        } else {
            "memory.max_usage_in_bytes"
        };
        read(&dir.join(f)).and_then(|s| s.parse().ok())
    }

    /// Removes the group's directories (the server and its children are gone by then; a
    /// task still leaving is waited for briefly). Idempotent.
    pub fn remove(&mut self) {
        for d in std::mem::take(&mut self.dirs) {
            for _ in 0..50 {
                match std::fs::remove_dir(&d) {
                    Ok(()) => break,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
                    Err(_) => std::thread::sleep(std::time::Duration::from_millis(20)),
                }
            }
        }
        if std::mem::take(&mut self.v2_held) {
            release_layout();
        }
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        self.remove();
    }
}

/// Removes the empty groups that tsbsctl processes no longer alive left under `own` (a kill -9
/// of tsbsctl: its server died with it, the directory stayed).
fn sweep_in(own: &Path) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    let Ok(rd) = std::fs::read_dir(own) else {
        return removed;
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix(PREFIX)
            .and_then(|r| r.split('-').next())
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        if pid as u32 == std::process::id() || crate::fsutil::process_alive(pid) {
            continue;
        }
        // rmdir fails on a group that still has tasks: those are left (and said by `verify`).
        if std::fs::remove_dir(e.path()).is_ok() {
            removed.push(e.path());
        }
    }
    removed
}

/// Sweeps every hierarchy tsbsctl's group is in; returns what it removed.
pub fn sweep() -> Vec<PathBuf> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let cgroup = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    hierarchies(&mountinfo, &cgroup)
        .iter()
        .flat_map(|h| sweep_in(&h.own))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO_V1: &str = "\
30 25 0:26 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
31 30 0:27 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
32 30 0:28 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
33 30 0:29 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset
34 30 0:30 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
35 30 0:31 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
36 30 0:32 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";
    const CGROUP_V1: &str = "\
8:pids:/
4:memory:/process_api/11ab
3:cpuset:/
2:cpuacct:/
1:cpu:/
0::/
";

    #[test]
    fn v1_hierarchies_and_our_group_in_each() {
        let h = hierarchies(MOUNTINFO_V1, CGROUP_V1);
        let mem = h.iter().find(|h| h.controllers == ["memory"]).unwrap();
        assert_eq!(mem.own, Path::new("/sys/fs/cgroup/memory/process_api/11ab"));
        let cpu = h.iter().find(|h| h.controllers == ["cpu"]).unwrap();
        assert_eq!(cpu.own, Path::new("/sys/fs/cgroup/cpu"));
        assert!(h
            .iter()
            .any(|h| h.v2 && h.own == Path::new("/sys/fs/cgroup/unified")));
        assert!(!h.iter().any(|h| h.controllers.iter().any(|c| c == "pids")));
    }

    #[test]
    fn v2_with_a_container_root_and_an_escaped_mount_point() {
        let mi = "40 1 0:35 /kubepods/pod1 /sys/fs/cgroup\\040x rw - cgroup2 cgroup2 rw\n";
        let cg = "0::/kubepods/pod1/ctr\n";
        let h = hierarchies(mi, cg);
        assert_eq!(h.len(), 1);
        assert!(h[0].v2);
        assert_eq!(h[0].own, Path::new("/sys/fs/cgroup x/ctr"));
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0-3,8,10-11\n"), vec![0, 1, 2, 3, 8, 10, 11]);
        assert_eq!(parse_cpu_list(""), Vec::<u32>::new());
        assert_eq!(cpu_list(&[0, 1, 5]), "0,1,5");
    }

    #[test]
    fn nonsense_shapes_are_refused_before_any_group_is_looked_for() {
        let e = check(&Shape {
            cpus: Some(0.0),
            memory_bytes: None,
        })
        .unwrap_err();
        assert_eq!(e.exit_code(), 2, "{e:?}");
        let e = check(&Shape {
            cpus: None,
            memory_bytes: Some(1 << 20),
        })
        .unwrap_err();
        assert!(e.message.contains("64 MiB"), "{e:?}");
    }

    /// A cgroup v2 hierarchy mounted for the test, with a controller that v1 does not hold
    /// standing in for cpu/cpuset/memory (which this host binds to v1): a group of the test's
    /// own under the root, the controller offered to it. Undone on drop.
    struct RealV2 {
        mount: tempfile::TempDir,
        group: PathBuf,
        controller: String,
        /// The root's subtree_control had to be given the controller (and loses it again).
        enabled_at_root: bool,
        children: Vec<std::process::Child>,
    }

    impl RealV2 {
        fn new() -> Result<RealV2, String> {
            // SAFETY: geteuid has no preconditions.
            if unsafe { libc::geteuid() } != 0 {
                return Err("not root".into());
            }
            let mount = tempfile::tempdir().map_err(|e| e.to_string())?;
            let target = CString::new(mount.path().as_os_str().as_bytes()).unwrap();
            let (src, fstype) = (
                CString::new("none").unwrap(),
                CString::new("cgroup2").unwrap(),
            );
            // SAFETY: mount(2) with valid C strings and no data.
            let rc = unsafe {
                libc::mount(
                    src.as_ptr(),
                    target.as_ptr(),
                    fstype.as_ptr(),
                    0,
                    std::ptr::null(),
                )
            };
            if rc != 0 {
                return Err(format!(
                    "cannot mount cgroup2: {}",
                    std::io::Error::last_os_error()
                ));
            }
            let root = mount.path().to_path_buf();
            let mut v2 = RealV2 {
                group: root.join(format!("tsbsctl-test-{}", std::process::id())),
                mount,
                controller: String::new(),
                enabled_at_root: false,
                children: Vec::new(),
            };
            let offered = read(&root.join("cgroup.controllers")).unwrap_or_default();
            // Controllers a v1 hierarchy does not hold show up here; any domain one will do.
            let Some(c) = ["hugetlb", "pids", "rdma", "misc", "memory", "io"]
                .into_iter()
                .find(|c| offered.split_whitespace().any(|x| x == *c))
            else {
                return Err(format!(
                    "no stand-in controller offered by cgroup v2 (\"{offered}\")"
                ));
            };
            v2.controller = c.to_string();
            let on = read(&root.join("cgroup.subtree_control")).unwrap_or_default();
            if !on.split_whitespace().any(|x| x == c) {
                std::fs::write(root.join("cgroup.subtree_control"), format!("+{c}"))
                    .map_err(|e| format!("cannot enable {c} at the root: {e}"))?;
                v2.enabled_at_root = true;
            }
            std::fs::create_dir(&v2.group).map_err(|e| e.to_string())?;
            Ok(v2)
        }

        /// A process standing in for tsbsctl (or a stranger), moved into `group`.
        fn process_in(&mut self, group: &Path) -> u32 {
            let c = std::process::Command::new("sleep")
                .arg("300")
                .spawn()
                .unwrap();
            let pid = c.id();
            self.children.push(c);
            std::fs::write(group.join("cgroup.procs"), pid.to_string()).unwrap();
            pid
        }

        fn kill(&mut self, pid: u32) {
            if let Some(i) = self.children.iter().position(|c| c.id() == pid) {
                let mut c = self.children.remove(i);
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }

    impl Drop for RealV2 {
        fn drop(&mut self) {
            for mut c in std::mem::take(&mut self.children) {
                let _ = c.kill();
                let _ = c.wait();
            }
            // Children first, then the group (rmdir of an emptied group may take a moment).
            for _ in 0..100 {
                if let Ok(rd) = std::fs::read_dir(&self.group) {
                    for e in rd.flatten().filter(|e| e.path().is_dir()) {
                        let _ = std::fs::remove_dir(e.path());
                    }
                }
                let _ = std::fs::write(
                    self.group.join("cgroup.subtree_control"),
                    format!("-{}", self.controller),
                );
                if std::fs::remove_dir(&self.group).is_ok() || !self.group.exists() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            if self.enabled_at_root {
                let _ = std::fs::write(
                    self.mount.path().join("cgroup.subtree_control"),
                    format!("-{}", self.controller),
                );
            }
            let target = CString::new(self.mount.path().as_os_str().as_bytes()).unwrap();
            // SAFETY: umount2(2) on the path mounted in `new`.
            unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) };
        }
    }

    fn procs(dir: &Path) -> Vec<u32> {
        read(&dir.join("cgroup.procs"))
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect()
    }

    fn on(dir: &Path) -> String {
        read(&dir.join("cgroup.subtree_control")).unwrap_or_default()
    }

    /// Issue 24 §3.2 on a real cgroup v2 hierarchy: the kernel refuses controllers to the
    /// children of a group that holds a process (EBUSY), so tsbsctl moves itself into a leaf
    /// first; a stranger in its group is refused before anything is written; the layout is
    /// undone; a kill -9 leaves the leaf and the server's group, and the sweep takes both.
    #[test]
    fn cgroup_v2_leaf_first_then_controllers_then_the_servers_group_beside_it() {
        let mut v2 = match RealV2::new() {
            Ok(v) => v,
            Err(why) => {
                eprintln!("SKIP: no cgroup v2 to try: {why}");
                return;
            }
        };
        let (own, c) = (v2.group.clone(), v2.controller.clone());
        let ctrls = [c.as_str()];
        let me = v2.process_in(&own);
        // The rule is live here: enabling with a process inside is refused.
        let e = std::fs::write(own.join("cgroup.subtree_control"), format!("+{c}")).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EBUSY), "{e}");

        // A stranger in the group: refused by the read-only check (bad input), nothing written.
        let stranger = v2.process_in(&own);
        let e = v2_enter(&own, &ctrls, me).unwrap_err();
        assert_eq!(e.exit_code(), 2, "{e:?}");
        assert!(e.message.contains(&stranger.to_string()), "{}", e.message);
        assert!(!v2_leaf(&own, me).exists());
        assert_eq!(on(&own), "");
        v2.kill(stranger);

        // Alone: leaf, then controllers, then the server's group beside the leaf.
        let layout = v2_enter(&own, &ctrls, me).unwrap();
        assert_eq!(layout.enabled, vec![c.clone()]);
        assert_eq!(procs(&layout.leaf), vec![me]);
        assert!(procs(&own).is_empty());
        assert!(on(&own).split_whitespace().any(|x| x == c), "{}", on(&own));
        let server = own.join(format!("{PREFIX}{me}-1"));
        std::fs::create_dir(&server).unwrap();
        assert!(read(&server.join("cgroup.controllers"))
            .unwrap()
            .contains(&c));
        // A server process can join it.
        let srv = v2.process_in(&server);
        assert_eq!(procs(&server), vec![srv]);
        v2.kill(srv);
        std::fs::remove_dir(&server).unwrap();

        // Undone: the controller off, tsbsctl back, the leaf gone.
        v2_leave(&layout, me);
        assert_eq!(on(&own), "");
        assert_eq!(procs(&own), vec![me]);
        assert!(!layout.leaf.exists());

        // kill -9 with the layout in place: both groups stay; the sweep removes both.
        let layout = v2_enter(&own, &ctrls, me).unwrap();
        std::fs::create_dir(&server).unwrap();
        v2.kill(me);
        let mut swept = sweep_in(&own);
        swept.sort();
        let mut both = vec![layout.leaf.clone(), server.clone()];
        both.sort();
        assert_eq!(swept, both);
    }
}
