//! Model prices and request costs (PRV-14, PRV-15). Prices come from the provider's
//! `GET /models` listing, read at most once per provider per command with a 10 s cap.
//! OpenRouter lists `pricing.prompt` and `pricing.completion` in USD per token, as
//! decimal strings (openrouter.ai/docs, "Models"); a listing that says its unit is per
//! million tokens (NanoGPT's detailed listing) is scaled. Without a price the cost is
//! unknown, never zero, and pricing problems never fail a stage.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::llm::{Client, Usage};

/// The cap on reading one provider's listing.
pub const LISTING_CAP: Duration = Duration::from_secs(10);

/// A model's price, in USD per token.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Price {
    /// USD per input token.
    pub input: f64,
    /// USD per output token.
    pub output: f64,
}

impl Price {
    /// Cost of `usage`, in USD.
    #[must_use]
    pub fn cost(&self, usage: Usage) -> f64 {
        #[allow(clippy::cast_precision_loss)]
        let cost =
            usage.input_tokens as f64 * self.input + usage.output_tokens as f64 * self.output;
        cost
    }
}

fn number(value: Option<&Value>) -> Option<f64> {
    match value? {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
    .filter(|x: &f64| x.is_finite() && *x >= 0.0)
}

/// The prices of a `/models` listing, by model ID. Models without both prices are left
/// out.
#[must_use]
pub fn parse_listing(listing: &Value) -> HashMap<String, Price> {
    let mut prices = HashMap::new();
    let Some(models) = listing.get("data").and_then(Value::as_array) else {
        return prices;
    };
    for model in models {
        let Some(id) = model.get("id").and_then(Value::as_str) else {
            continue;
        };
        let Some(pricing) = model.get("pricing") else {
            continue;
        };
        let input = number(pricing.get("prompt").or_else(|| pricing.get("input")));
        let output = number(pricing.get("completion").or_else(|| pricing.get("output")));
        let per_million = pricing
            .get("unit")
            .and_then(Value::as_str)
            .is_some_and(|unit| unit.contains("million"));
        let scale = if per_million { 1e-6 } else { 1.0 };
        if let (Some(input), Some(output)) = (input, output) {
            prices.insert(
                id.to_owned(),
                Price {
                    input: input * scale,
                    output: output * scale,
                },
            );
        }
    }
    prices
}

/// Prices read lazily, once per provider, for one command.
#[derive(Debug, Default, Clone)]
pub struct PriceBook {
    listings: Arc<tokio::sync::Mutex<HashMap<String, Listing>>>,
}

/// The prices of one provider's listing, by model ID.
type Listing = Arc<HashMap<String, Price>>;

impl PriceBook {
    /// An empty book.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// The price of `model` at `provider`, reading the listing through `client` the first
    /// time the provider is asked for; `None` when unknown for any reason.
    pub async fn price(&self, provider: &str, client: &Client, model: &str) -> Option<Price> {
        let mut listings = self.listings.lock().await;
        if !listings.contains_key(provider) {
            let prices = match client.models(LISTING_CAP).await {
                Ok(listing) => parse_listing(&listing),
                Err(error) => {
                    tracing::debug!(%error, provider, "no price listing");
                    HashMap::new()
                }
            };
            listings.insert(provider.to_owned(), Arc::new(prices));
        }
        listings
            .get(provider)
            .and_then(|prices| prices.get(model).copied())
    }
}

/// A running cost: the known part, and how many requests had no price (PRV-15).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Cost {
    /// USD of the requests with a known price.
    pub known_usd: f64,
    /// Requests with a known price.
    pub priced: u64,
    /// Requests without a price.
    pub unpriced: u64,
}

impl Cost {
    /// Adds a request of `usage` at `price`.
    pub fn add(&mut self, price: Option<Price>, usage: Usage) {
        match price {
            Some(price) => {
                self.known_usd += price.cost(usage);
                self.priced += 1;
            }
            None => self.unpriced += 1,
        }
    }

    /// Adds another cost.
    pub fn merge(&mut self, other: Cost) {
        self.known_usd += other.known_usd;
        self.priced += other.priced;
        self.unpriced += other.unpriced;
    }

    /// The total in USD, `None` when no request had a price but some had none.
    #[must_use]
    pub fn usd(&self) -> Option<f64> {
        (self.unpriced == 0 || self.priced > 0).then_some(self.known_usd)
    }

    /// Whether part of the cost is unknown.
    #[must_use]
    pub fn is_partial(&self) -> bool {
        self.unpriced > 0 && self.priced > 0
    }
}

impl std::fmt::Display for Cost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.usd() {
            None => f.write_str("cost unknown"),
            Some(usd) if self.is_partial() => write!(f, "${usd:.4} (partial, some prices unknown)"),
            Some(usd) => write!(f, "${usd:.4}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn listing_shapes() {
        let listing = json!({"data": [
            {"id": "a", "pricing": {"prompt": "0.000001", "completion": "0.000002"}},
            {"id": "b", "pricing": {"prompt": 0.5, "completion": 1.5, "unit": "per_million_tokens"}},
            {"id": "c", "pricing": {"prompt": "x"}},
            {"id": "d"}]});
        let prices = parse_listing(&listing);
        assert_eq!(
            prices["a"],
            Price {
                input: 1e-6,
                output: 2e-6
            }
        );
        assert!((prices["b"].input - 0.5e-6).abs() < 1e-15);
        assert!(!prices.contains_key("c") && !prices.contains_key("d"));
        assert!(parse_listing(&json!({"object": "list"})).is_empty());
    }

    #[test]
    fn unknown_is_never_zero() {
        let usage = Usage {
            input_tokens: 1000,
            output_tokens: 500,
        };
        let mut cost = Cost::default();
        assert_eq!(cost.usd(), Some(0.0));
        cost.add(None, usage);
        assert_eq!(cost.usd(), None);
        assert_eq!(cost.to_string(), "cost unknown");
        cost.add(
            Some(Price {
                input: 1e-6,
                output: 2e-6,
            }),
            usage,
        );
        assert!(cost.is_partial());
        assert!((cost.usd().unwrap() - 0.002).abs() < 1e-12);
        assert!(cost.to_string().contains("partial"));
    }
}
