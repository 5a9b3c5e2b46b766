//! Every blocking HTTP client tsbsctl builds, named by what it talks to (rustup's download
//! layer: one place decides proxies and timeouts). A blocking client starts its own runtime
//! thread, so the long-lived ones are built once per process and cloned (a clone shares the
//! connection pool). The release downloads keep their own client (`download::client`: user
//! agent, no redirects, idle timeout), built through [`build`] too.

use std::sync::OnceLock;
use std::time::Duration;

use reqwest::blocking::{Client, ClientBuilder};

use crate::error::{Error, Result};

/// Builds a client, the error worded once.
pub fn build(b: ClientBuilder) -> Result<Client> {
    b.build()
        .map_err(|e| Error::failed(format!("could not build an HTTP client: {e}")))
}

/// A server tsbsctl manages, on loopback: no proxy (a proxy variable must never route a
/// local statement elsewhere); `timeout` per request (`None`: a maintenance statement the
/// server answers when its work is done), 5 s to connect.
pub fn local(timeout: Option<Duration>) -> Result<Client> {
    build(
        Client::builder()
            .no_proxy()
            .connect_timeout(Duration::from_secs(5))
            .timeout(timeout),
    )
}

/// [`local`] with one timeout for the whole process, built once.
pub fn local_shared(cell: &'static OnceLock<Client>, timeout: Duration) -> Result<Client> {
    if let Some(c) = cell.get() {
        return Ok(c.clone());
    }
    let c = local(Some(timeout))?;
    Ok(cell.get_or_init(|| c).clone())
}

/// A server tsbsctl does not manage: proxies honoured (it may sit behind one); `timeout` per
/// request, 5 s to connect; built once per process.
pub fn external() -> Result<Client> {
    static CLIENT: OnceLock<Client> = OnceLock::new();
    if let Some(c) = CLIENT.get() {
        return Ok(c.clone());
    }
    let c = build(
        Client::builder()
            .timeout(Duration::from_secs(10))
            .connect_timeout(Duration::from_secs(5)),
    )?;
    Ok(CLIENT.get_or_init(|| c).clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_clients_are_built_once() {
        static CELL: OnceLock<Client> = OnceLock::new();
        local_shared(&CELL, Duration::from_secs(3)).unwrap();
        assert!(CELL.get().is_some());
        // A second call reuses the first client, whatever it asks.
        local_shared(&CELL, Duration::from_secs(9)).unwrap();
        assert!(local(None).is_ok() && external().is_ok());
    }
}
