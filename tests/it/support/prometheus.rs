//! Reading a Prometheus text exposition, as a scraper does.

/// One sample of a Prometheus text exposition.
#[derive(Debug)]
pub struct Sample {
    pub name: String,
    pub labels: std::collections::BTreeMap<String, String>,
    pub value: f64,
}

/// Parses the Prometheus text format (version 0.0.4): `# HELP`/`# TYPE`
/// lines and samples `name{label="value",...} number`. Fails the test on
/// any line that is neither; returns the samples and the declared types.
pub fn parse_exposition(text: &str) -> (Vec<Sample>, std::collections::BTreeMap<String, String>) {
    let valid_name = |n: &str| {
        !n.is_empty()
            && n.chars().enumerate().all(|(i, c)| {
                c == '_' || c == ':' || c.is_ascii_alphabetic() || (i > 0 && c.is_ascii_digit())
            })
    };
    let mut samples = Vec::new();
    let mut types = std::collections::BTreeMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').expect("# TYPE name kind");
            assert!(valid_name(name), "{line}");
            assert!(
                ["counter", "gauge", "histogram", "summary", "untyped"].contains(&kind),
                "{line}"
            );
            types.insert(name.to_string(), kind.to_string());
            continue;
        }
        if line.starts_with('#') {
            continue;
        }
        let (series, value) = line.rsplit_once(' ').expect("a sample: series value");
        let value: f64 = match value {
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            v => v.parse().unwrap_or_else(|_| panic!("value of {line:?}")),
        };
        let (name, labels) = match series.split_once('{') {
            None => (series, std::collections::BTreeMap::new()),
            Some((name, rest)) => {
                let body = rest.strip_suffix('}').expect("labels end with }");
                let mut labels = std::collections::BTreeMap::new();
                let mut rest = body;
                while !rest.is_empty() {
                    let (key, after) = rest.split_once("=\"").expect("label=\"value\"");
                    assert!(valid_name(key), "label {key:?} in {line}");
                    let mut value = String::new();
                    let mut chars = after.char_indices();
                    let end = loop {
                        match chars.next().expect("closing quote") {
                            (i, '"') => break i,
                            (_, '\\') => value.push(chars.next().expect("escaped char").1),
                            (_, c) => value.push(c),
                        }
                    };
                    labels.insert(key.to_string(), value);
                    rest = after[end + 1..].trim_start_matches(',');
                }
                (name, labels)
            }
        };
        assert!(valid_name(name), "metric name {name:?}");
        samples.push(Sample {
            name: name.to_string(),
            labels,
            value,
        });
    }
    (samples, types)
}

/// `GET /metrics` on `addr`, as a scraper does; `None` while nothing
/// listens.
pub async fn scrape(addr: &str) -> Option<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut conn = tokio::net::TcpStream::connect(addr).await.ok()?;
    conn.write_all(b"GET /metrics HTTP/1.1\r\nHost: kdi\r\nConnection: close\r\n\r\n")
        .await
        .ok()?;
    let mut response = String::new();
    conn.read_to_string(&mut response).await.ok()?;
    let (head, body) = response.split_once("\r\n\r\n")?;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    Some(body.to_string())
}

/// The value of the first sample named `name` whose labels include all of
/// `labels`.
pub fn value(samples: &[Sample], name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    samples
        .iter()
        .find(|s| {
            s.name == name
                && labels
                    .iter()
                    .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
        })
        .map(|s| s.value)
}
