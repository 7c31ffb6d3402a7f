//! What `GET /metrics` reports, in Prometheus' text format: tool calls by tool and outcome, their latency, HTTP
//! responses by status and refused tokens by reason. No label ever holds a request's text: a tool name outside the
//! catalogue is counted as `unknown`, and a refused token is counted by its reason alone.

use std::time::Duration;

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

type Labels = Vec<(&'static str, String)>;

fn latency() -> Histogram {
    // 1 ms to about 16 s.
    Histogram::new(exponential_buckets(0.001, 2.0, 15))
}

/// The server's counters, shared by every connection.
pub(super) struct Metrics {
    registry: Registry,
    calls: Family<Labels, Counter>,
    durations: Family<Labels, Histogram, fn() -> Histogram>,
    responses: Family<Labels, Counter>,
    refusals: Family<Labels, Counter>,
    known_tools: Vec<String>,
}

impl Metrics {
    /// Counters for a server whose catalogue holds `known_tools`.
    pub(super) fn new(known_tools: Vec<String>) -> Metrics {
        let mut registry = Registry::default();
        let calls = Family::<Labels, Counter>::default();
        let durations = Family::<Labels, Histogram, fn() -> Histogram>::new_with_constructor(latency);
        let responses = Family::<Labels, Counter>::default();
        let refusals = Family::<Labels, Counter>::default();
        registry.register(
            "alp_tool_calls",
            "Tool calls answered, by tool and outcome (ok or the error code)",
            calls.clone(),
        );
        registry.register(
            "alp_tool_call_duration_seconds",
            "Time from a tool call's start to its result, by tool",
            durations.clone(),
        );
        registry.register("alp_http_responses", "HTTP responses sent, by status", responses.clone());
        registry.register(
            "alp_token_refusals",
            "Requests refused for their token, by reason",
            refusals.clone(),
        );
        Metrics { registry, calls, durations, responses, refusals, known_tools }
    }

    fn tool_label(&self, tool: &str) -> String {
        if self.known_tools.iter().any(|known| known == tool) {
            tool.to_owned()
        } else {
            "unknown".to_owned()
        }
    }

    /// A tool call ended with `outcome` (`ok` or its error code) after `took`.
    pub(super) fn tool_call(&self, tool: &str, outcome: &str, took: Duration) {
        let tool = self.tool_label(tool);
        self.calls.get_or_create(&vec![("tool", tool.clone()), ("outcome", outcome.to_owned())]).inc();
        self.durations.get_or_create(&vec![("tool", tool)]).observe(took.as_secs_f64());
    }

    /// A response with `status` was sent.
    pub(super) fn response(&self, status: u16) {
        self.responses.get_or_create(&vec![("status", status.to_string())]).inc();
    }

    /// A request was refused for its token, for `reason`.
    pub(super) fn refusal(&self, reason: &str) {
        self.refusals.get_or_create(&vec![("reason", reason.to_owned())]).inc();
    }

    /// The text format.
    pub(super) fn render(&self) -> String {
        let mut text = String::new();
        // Writing into a String cannot fail.
        let _ = encode(&mut text, &self.registry);
        text
    }
}
