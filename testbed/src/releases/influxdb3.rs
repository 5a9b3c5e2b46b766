//! Stand-in influxdb3 releases served by the mirror.
