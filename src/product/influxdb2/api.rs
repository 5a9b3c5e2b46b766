//! InfluxDB 2's HTTP API as tsbsctl uses it (reference influxdb2.md §4-§5): onboarding
//! (`/api/v2/setup`), organisations and buckets (`/api/v2/orgs`, `/api/v2/buckets`), the v1
//! compatibility `/query` for row counts, and `/health`. Every request but setup and health
//! carries `Authorization: Token <token>`; the token is never put in a URL or a message.

use std::time::Duration;

use reqwest::blocking::{Client, RequestBuilder};
use serde_json::{json, Value};

use crate::error::{Error, Missing, Result};
use crate::http::Answer;

/// A client for one server and token.
pub struct Api<'a> {
    pub client: Client,
    pub endpoint: &'a str,
    pub token: Option<&'a str>,
}

fn base(endpoint: &str) -> &str {
    endpoint.trim_end_matches('/')
}

impl<'a> Api<'a> {
    pub fn new(endpoint: &'a str, token: Option<&'a str>) -> Result<Api<'a>> {
        Ok(Api {
            client: super::super::admin_client()?,
            endpoint,
            token,
        })
    }

    fn auth(&self, r: RequestBuilder) -> RequestBuilder {
        match self.token {
            Some(t) => r.header("Authorization", format!("Token {t}")),
            None => r,
        }
    }

    /// The words that name the server in a message.
    fn server(&self) -> String {
        format!("InfluxDB 2 at {}", self.endpoint)
    }

    fn send(&self, what: &str, r: RequestBuilder, limit: Option<Duration>) -> Result<Answer> {
        crate::http::send(&self.server(), what, self.auth(r), limit)
    }

    /// A JSON answer with one of the `ok` statuses; anything else is an error that names the
    /// status and the server's message (never the token).
    fn json(&self, what: &str, r: RequestBuilder, ok: &[u16]) -> Result<Value> {
        let a = self.send(what, r, None)?;
        let status = a.status.as_u16();
        if !ok.contains(&status) {
            let err = a.refused(&self.server(), what, &a.said("message"));
            return Err(if status == 401 || status == 403 {
                Error::invalid(err.message).with_hint(format!(
                    "the token was not accepted; give one with all-access to the organisation in ${}",
                    super::TOKEN_ENV
                ))
            } else {
                err
            });
        }
        if a.text.trim().is_empty() {
            return Ok(Value::Null);
        }
        a.json(&self.server(), what)
    }

    /// `GET /health`: the body (`{"name":"influxdb","status":"pass","version":"v2.7.12",...}`).
    pub fn health(&self) -> Result<Value> {
        let r = self.client.get(format!("{}/health", base(self.endpoint)));
        self.json("GET /health", r, &[200])
    }

    /// `GET /api/v2/setup`: whether onboarding is still allowed (nobody set it up yet).
    pub fn setup_allowed(&self) -> Result<bool> {
        let r = self
            .client
            .get(format!("{}/api/v2/setup", base(self.endpoint)));
        let v = self.json("GET /api/v2/setup", r, &[200])?;
        Ok(v["allowed"].as_bool().unwrap_or(false))
    }

    /// `POST /api/v2/setup`: the first user, organisation and bucket, with our own operator
    /// token and no retention (TSBS timestamps are years old: a finite retention drops them).
    pub fn setup(&self, user: &str, org: &str, bucket: &str, token: &str) -> Result<()> {
        let body = json!({"username": user, "org": org, "bucket": bucket, "token": token});
        let r = self
            .client
            .post(format!("{}/api/v2/setup", base(self.endpoint)))
            .json(&body);
        // No auth header: setup is the one call made before a token exists.
        let a = crate::http::send(&self.server(), "POST /api/v2/setup", r, None)?;
        if a.status.as_u16() != 201 {
            return Err(a.refused(&self.server(), "its setup", &a.said("message")));
        }
        Ok(())
    }

    /// The id of organisation `name`.
    pub fn org_id(&self, name: &str) -> Result<String> {
        let r = self
            .client
            .get(format!("{}/api/v2/orgs", base(self.endpoint)))
            .query(&[("org", name)]);
        let v = self.json("GET /api/v2/orgs", r, &[200])?;
        v["orgs"]
            .as_array()
            .and_then(|a| a.first())
            .and_then(|o| o["id"].as_str())
            .map(str::to_string)
            .ok_or_else(|| {
                Error::failed(format!(
                    "InfluxDB 2 at {} has no organisation {name:?}",
                    self.endpoint
                ))
            })
    }

    /// The organisations the token can read: `(id, name)`.
    pub fn orgs(&self) -> Result<Vec<(String, String)>> {
        let r = self
            .client
            .get(format!("{}/api/v2/orgs", base(self.endpoint)));
        let v = self.json("GET /api/v2/orgs", r, &[200])?;
        Ok(v["orgs"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|o| {
                        Some((
                            o["id"].as_str()?.to_string(),
                            o["name"].as_str()?.to_string(),
                        ))
                    })
                    .collect()
            })
            .unwrap_or_default())
    }

    /// The bucket named `name`, if the token sees one: `(id, orgID)`.
    pub fn bucket(&self, name: &str) -> Result<Option<(String, String)>> {
        let r = self
            .client
            .get(format!("{}/api/v2/buckets", base(self.endpoint)))
            .query(&[("name", name)]);
        let v = self.json("GET /api/v2/buckets", r, &[200, 404])?;
        Ok(v["buckets"].as_array().and_then(|a| {
            a.iter().find(|b| b["name"] == name).and_then(|b| {
                Some((
                    b["id"].as_str()?.to_string(),
                    b["orgID"].as_str()?.to_string(),
                ))
            })
        }))
    }

    /// `POST /api/v2/buckets` with no retention rule (infinite).
    pub fn create_bucket(&self, org_id: &str, name: &str) -> Result<()> {
        let r = self
            .client
            .post(format!("{}/api/v2/buckets", base(self.endpoint)))
            .json(&json!({"orgID": org_id, "name": name, "retentionRules": []}));
        self.json("POST /api/v2/buckets", r, &[201]).map(|_| ())
    }

    /// `DELETE /api/v2/buckets/<id>` (its data with it).
    pub fn delete_bucket(&self, id: &str) -> Result<()> {
        let r = self
            .client
            .delete(format!("{}/api/v2/buckets/{id}", base(self.endpoint)));
        self.json("DELETE /api/v2/buckets", r, &[204]).map(|_| ())
    }

    /// InfluxQL over the v1 compatibility `/query` (database = bucket, through the virtual
    /// DBRP mapping every bucket has since 2.4): the first statement's result.
    /// The rows (series and time) of `table` in bucket `bucket`, by Flux: fields pivoted into
    /// one row per series and time, then counted. Returns the count and the query.
    pub fn flux_count_rows(
        &self,
        bucket: &str,
        table: &str,
        window: Option<(i64, i64)>,
        timeout: Duration,
    ) -> Result<(u64, String)> {
        let Some((_, org_id)) = self.bucket(bucket)? else {
            return Err(Error::failed(format!(
                "InfluxDB 2 at {} has no bucket {bucket}",
                self.endpoint
            ))
            .not_found(Missing::Database(bucket.into())));
        };
        let (start, stop) = match window {
            Some((s, e)) => (format!("time(v: {s})"), format!("time(v: {e})")),
            None => ("time(v: 0)".to_string(), "now()".to_string()),
        };
        let esc = |x: &str| x.replace('\\', "\\\\").replace('"', "\\\"");
        let flux = format!(
            "from(bucket: \"{}\") |> range(start: {start}, stop: {stop}) |> filter(fn: (r) => r._measurement == \"{}\") |> pivot(rowKey: [\"_time\"], columnKey: [\"_field\"], valueColumn: \"_value\") |> keep(columns: [\"_time\"]) |> map(fn: (r) => ({{r with _value: 1}})) |> group() |> count()",
            esc(bucket),
            esc(table)
        );
        let r = self
            .client
            .post(format!("{}/api/v2/query", base(self.endpoint)))
            .query(&[("orgID", org_id.as_str())])
            .header("Accept", "application/csv")
            .json(&json!({"query": flux, "type": "flux", "dialect": {"header": true, "annotations": []}}));
        let a = self.send("a Flux count", r, Some(timeout))?;
        if !a.is_success() {
            return Err(a.refused(&self.server(), "a Flux count", a.text.trim()));
        }
        Ok((parse_flux_count(&a.text), flux))
    }

    pub fn influxql(&self, db: &str, q: &str, timeout: Duration) -> Result<Value> {
        let r = self
            .client
            .post(format!("{}/query", base(self.endpoint)))
            .query(&[("db", db), ("q", q)])
            .timeout(timeout);
        let v = self.json("an InfluxQL query", r, &[200])?;
        let first = v["results"][0].clone();
        if let Some(e) = first["error"].as_str() {
            return Err(Error::failed(format!(
                "InfluxDB 2 at {} failed `{q}`: {e}",
                self.endpoint
            )));
        }
        Ok(first)
    }
}

/// The rows of `table`: InfluxQL `count(*)` gives one count per field, which is the row count
/// when every row carries every field (cpu-only, devops: the counts agree). IoT clears fields
/// at random, so no field is in every row and the largest count falls short (seen on a real
/// influxd 2.7.12: 2,576 of 2,577 readings): when the field counts differ, the rows are counted
/// exactly with Flux, one row per series and time. No series: 0.
pub fn count_rows(
    api: &Api,
    db: &str,
    table: &str,
    window: Option<(i64, i64)>,
    timeout: Duration,
) -> Result<(u64, Value)> {
    let mut q = format!("SELECT count(*) FROM \"{}\"", table.replace('"', "\\\""));
    if let Some((s, e)) = window {
        q.push_str(&format!(" WHERE time >= {s} AND time < {e}"));
    }
    let first = api
        .influxql(db, &q, timeout)
        .map_err(|e| bucket_gone(api, db, e))?;
    let Some(series) = first["series"].as_array().and_then(|s| s.first()) else {
        return Ok((0, json!({"query": q, "fields_counted": 0})));
    };
    let cols: Vec<&str> = series["columns"]
        .as_array()
        .map(|c| c.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let row = series["values"][0].as_array().cloned().unwrap_or_default();
    let counts: Vec<u64> = cols
        .iter()
        .zip(row.iter())
        .filter(|(c, _)| c.starts_with("count"))
        .map(|(_, v)| v.as_u64().unwrap_or(0))
        .collect();
    let best = counts.iter().copied().max().unwrap_or(0);
    if counts.iter().all(|&c| c == best) {
        return Ok((best, json!({"query": q, "fields_counted": counts.len()})));
    }
    let (rows, flux) = api.flux_count_rows(db, table, window, timeout)?;
    Ok((
        rows,
        json!({
            "query": q,
            "fields_counted": counts.len(),
            "largest_field_count": best,
            "fields_differ": true,
            "flux": flux,
        }),
    ))
}

/// `e`, the failure of a count in bucket `db`, as [`Missing::Database`] when the server's list
/// of buckets does not hold `db`. (influxd 2.7.12 answers the v1 `/query` of an unknown
/// database 200 with only words in the statement's `error`; an unknown measurement is no
/// series, 0 rows.)
fn bucket_gone(api: &Api, db: &str, e: Error) -> Error {
    match api.bucket(db) {
        Ok(None) => e.not_found(Missing::Database(db.into())),
        _ => e,
    }
}

/// The `_value` column of the first data row of a Flux CSV answer (`,result,table,_value`);
/// no row (no data in the range): 0.
fn parse_flux_count(csv: &str) -> u64 {
    let mut lines = csv.lines().map(str::trim).filter(|l| !l.is_empty());
    let Some(header) = lines.next() else { return 0 };
    let Some(col) = header.split(',').position(|c| c == "_value") else {
        return 0;
    };
    lines
        .next()
        .and_then(|l| l.split(',').nth(col))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod flux_tests {
    use crate::error::Missing;

    /// Issue 23 §4: influxd 2.7.12 answers the v1 `/query` of an unknown database 200 with
    /// words only (`database not found: b`); its list of buckets without it says the bucket is
    /// not there. A bucket it lists is not missing, whatever the words.
    #[test]
    fn a_count_in_a_bucket_the_server_does_not_list_is_missing_the_database() {
        let count = |bucket_list: &'static str| {
            let ep = crate::http::answers_in_turn(vec![
                (
                    "200 OK",
                    r#"{"results":[{"statement_id":0,"error":"database not found: b"}]}"#,
                ),
                ("200 OK", bucket_list),
            ]);
            let api = super::Api::new(&ep, Some("t")).unwrap();
            super::count_rows(&api, "b", "cpu", None, std::time::Duration::from_secs(5))
                .unwrap_err()
        };
        let e = count(r#"{"buckets":[]}"#);
        assert_eq!(e.missing(), Some(&Missing::Database("b".into())), "{e:?}");
        let e = count(r#"{"buckets":[{"id":"1","orgID":"2","name":"b"}]}"#);
        assert_eq!(e.missing(), None, "{e:?}");
    }

    #[test]
    fn a_flux_count_is_read_from_its_value_column() {
        let csv = ",result,table,_value\r\n,_result,0,2577\r\n\r\n";
        assert_eq!(super::parse_flux_count(csv), 2577);
        assert_eq!(super::parse_flux_count(""), 0);
        assert_eq!(super::parse_flux_count(",result,table,_value\r\n"), 0);
    }
}
