//! The host platform in the spellings each vendor uses.

use crate::error::{Error, Result};

/// Operating system and CPU architecture of the host (or of a requested target).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Platform {
    pub os: Os,
    pub arch: Arch,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Os {
    Linux,
    Darwin,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arch {
    Amd64,
    Arm64,
}

impl Platform {
    /// The platform this binary runs on; anything but Linux/macOS on x86_64/aarch64 is an error.
    pub fn host() -> Result<Platform> {
        Self::from_parts(std::env::consts::OS, std::env::consts::ARCH)
    }

    pub fn from_parts(os: &str, arch: &str) -> Result<Platform> {
        let os_v = match os {
            "linux" | "Linux" => Some(Os::Linux),
            "macos" | "darwin" | "Darwin" => Some(Os::Darwin),
            _ => None,
        };
        let arch_v = match arch.to_ascii_lowercase().as_str() {
            "x86_64" | "amd64" => Some(Arch::Amd64),
            "aarch64" | "arm64" => Some(Arch::Arm64),
            _ => None,
        };
        match (os_v, arch_v) {
            (Some(os), Some(arch)) => Ok(Platform { os, arch }),
            _ => Err(Error::invalid(format!("unsupported platform: {os} {arch}"))
                .with_hint("tsbsctl supports linux-amd64, linux-arm64, darwin-arm64 (and darwin-amd64 where Go and a product's releases have it)")),
        }
    }

    pub fn os_str(&self) -> &'static str {
        match self.os {
            Os::Linux => "linux",
            Os::Darwin => "darwin",
        }
    }

    pub fn arch_str(&self) -> &'static str {
        match self.arch {
            Arch::Amd64 => "amd64",
            Arch::Arm64 => "arm64",
        }
    }

    /// `linux-amd64`: the name of the platform directory in the state root, and GreptimeDB's and
    /// Go's spelling.
    pub fn dashed(&self) -> String {
        format!("{}-{}", self.os_str(), self.arch_str())
    }

    /// `linux_amd64`: InfluxData's spelling.
    pub fn underscored(&self) -> String {
        format!("{}_{}", self.os_str(), self.arch_str())
    }
}

impl std::fmt::Display for Platform {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.dashed())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings() {
        let p = Platform::from_parts("linux", "x86_64").unwrap();
        assert_eq!(p.dashed(), "linux-amd64");
        assert_eq!(p.underscored(), "linux_amd64");
        assert_eq!(
            Platform::from_parts("Darwin", "arm64").unwrap().dashed(),
            "darwin-arm64"
        );
        assert_eq!(
            Platform::from_parts("windows", "x86_64")
                .unwrap_err()
                .exit_code(),
            2
        );
        assert_eq!(
            Platform::from_parts("linux", "riscv64")
                .unwrap_err()
                .exit_code(),
            2
        );
    }
}
