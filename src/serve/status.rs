//! Refusals as the API server words them: a `Status` object with its HTTP
//! code and reason.

use serde_json::{Value, json};

/// Why a request was not answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Refusal {
    /// The HTTP status code.
    pub(super) code: u16,
    /// The `reason` of the `Status` (`NotFound`, `MethodNotAllowed`, ...).
    pub(super) reason: &'static str,
    pub(super) message: String,
}

impl Refusal {
    fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        Refusal {
            code,
            reason,
            message: message.into(),
        }
    }

    pub(super) fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    pub(super) fn unauthorized() -> Self {
        Self::new(401, "Unauthorized", "Unauthorized")
    }

    pub(super) fn forbidden(message: impl Into<String>) -> Self {
        Self::new(403, "Forbidden", message)
    }

    pub(super) fn not_found(message: impl Into<String>) -> Self {
        Self::new(404, "NotFound", message)
    }

    pub(super) fn method_not_allowed(method: &str) -> Self {
        Self::new(
            405,
            "MethodNotAllowed",
            format!("{method} is not allowed: kdi serves its caches read-only (get, list, watch)"),
        )
    }

    pub(super) fn not_acceptable(message: impl Into<String>) -> Self {
        Self::new(406, "NotAcceptable", message)
    }

    pub(super) fn expired(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    pub(super) fn unavailable(message: impl Into<String>) -> Self {
        Self::new(503, "ServiceUnavailable", message)
    }

    pub(super) fn timeout(message: impl Into<String>) -> Self {
        Self::new(504, "Timeout", message)
    }

    pub(super) fn internal(message: impl Into<String>) -> Self {
        Self::new(500, "InternalError", message)
    }

    /// The `Status` object.
    pub(super) fn status(&self) -> Value {
        json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        })
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: {}", self.code, self.reason, self.message)
    }
}
