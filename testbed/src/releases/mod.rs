//! The stand-in releases each product publishes on the mirror (archives shaped like the real
//! ones, their checksum files, and the "latest" metadata).

pub mod go;
pub mod greptime;
pub mod influxdb2;
pub mod influxdb3;
