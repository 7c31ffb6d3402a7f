//! The stdio transport: newline-delimited JSON-RPC, each request at most [`MAX_REQUEST_BYTES`] long.
//!
//! rmcp's own line transport stays silent on a line that is not JSON and drops an over-long line without a reply
//! (the client then waits for ever). This one answers both, as JSON-RPC 2.0 says, and keeps serving:
//! - a line that is not JSON: `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`;
//! - JSON that is not a JSON-RPC message: `-32600` (Invalid Request), with the request's `id` when it has one;
//! - a line longer than the limit: `-32600` with the request's `id` (read from the part that was kept), after
//!   which the rest of the line is read and thrown away: at most [`MAX_REQUEST_BYTES`] of it are ever held;
//! - a request whose `id` is not a string or an integer from -(2^53 - 1) to 2^53 - 1 (null, a float, a bool, an
//!   object, an array, a larger integer): `-32600` with `"id": null`, and nothing runs. rmcp would read `1.0` as
//!   `1`, take any `i64`, and read a null or float id as a notification that is never answered;
//! - before the first `initialize`, every request but `initialize` and `ping`: `-32002` ("server not initialized"),
//!   and nothing runs, whatever its `_meta` says (rmcp would serve a request whose `_meta` names a protocol
//!   revision). Notifications and responses that come before it are dropped without a reply (rmcp would end the
//!   session on them). Requests after `initialize` and before `notifications/initialized` are served.
//!
//! Request ids are rewritten on the way in: rmcp sees each request under an id of its own, and its answer goes out
//! under the client's id again. rmcp keys a call in flight by its id, so two calls under one id (which a client must
//! not send, but may) would otherwise leave one of them unanswered. A `notifications/cancelled` naming a client id
//! cancels every call in flight under it; one naming no call in flight is dropped.
//!
//! End of input ends the session (rmcp then answers the calls still running and stops); a last line without a
//! final newline is still read.
//!
//! `receive` is polled inside rmcp's `select!` and may be dropped at any await point, so a partly read line lives
//! in the struct and bytes move from the reader's buffer to it with no await in between. Replies of the transport
//! itself are written by spawned tasks that take the same writer lock as `send`, so lines never interleave, and
//! `close` waits for them.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::{ClientNotification, ClientRequest, JsonRpcMessage, RequestId};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;
use tokio::task::JoinHandle;

/// The longest request line accepted, in bytes, without its newline: 4 MiB.
pub const MAX_REQUEST_BYTES: usize = 4 * 1024 * 1024;

/// JSON-RPC: the line is not JSON.
const PARSE_ERROR: i64 = -32700;
/// JSON-RPC: the JSON is not a request (also used for a request over the size limit or with a bad id).
const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC: the params do not fit the method.
const INVALID_PARAMS: i64 = -32602;
/// MCP: a request other than `initialize` and `ping` before `initialize`.
const NOT_INITIALIZED: i64 = -32002;
/// The largest integer id magnitude: 2^53 - 1, the integers every JSON reader holds exactly.
const MAX_SAFE_ID: i64 = (1 << 53) - 1;
/// The answer to a request with an id outside [`is_request_id`].
const BAD_ID: &str = "Invalid Request: the id must be a string or an integer from -(2^53 - 1) to 2^53 - 1";

/// A size-capped, newline-delimited JSON-RPC transport for the server side, over any reader and writer.
pub(crate) struct LineTransport<R, W> {
    reader: BufReader<R>,
    writer: Arc<Mutex<W>>,
    max_line: usize,
    /// The line read so far (never more than `max_line` bytes).
    line: Vec<u8>,
    /// Set while the rest of an over-long line is being thrown away.
    discarding: bool,
    /// Replies of the transport itself still being written.
    replies: Vec<JoinHandle<()>>,
    /// The calls rmcp is running, under the ids it sees.
    calls: Calls,
    /// Messages read but not yet handed to rmcp (a cancellation that names several calls).
    queued: VecDeque<RxJsonRpcMessage<RoleServer>>,
}

impl<R, W> std::fmt::Debug for LineTransport<R, W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LineTransport")
            .field("max_line", &self.max_line)
            .field("buffered", &self.line.len())
            .field("discarding", &self.discarding)
            .field("initialized", &self.calls.initialized)
            .field("in_flight", &self.calls.clients.len())
            .finish_non_exhaustive()
    }
}

/// What the reader found.
enum Read {
    /// A whole line is in `self.line`.
    Line,
    /// End of input, nothing left.
    End,
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    /// A transport reading requests from `reader` and writing to `writer`, refusing lines over `max_line` bytes.
    pub(crate) fn new(reader: R, writer: W, max_line: usize) -> LineTransport<R, W> {
        LineTransport {
            reader: BufReader::with_capacity(64 * 1024, reader),
            writer: Arc::new(Mutex::new(writer)),
            max_line,
            line: Vec::new(),
            discarding: false,
            replies: Vec::new(),
            calls: Calls::default(),
            queued: VecDeque::new(),
        }
    }

    /// Writes a reply of the transport itself without awaiting it here (`receive` must stay cancel-safe).
    fn reply(&mut self, message: &Value) {
        let mut bytes = message.to_string().into_bytes();
        bytes.push(b'\n');
        let writer = Arc::clone(&self.writer);
        self.replies.retain(|reply| !reply.is_finished());
        self.replies.push(tokio::spawn(async move {
            let mut writer = writer.lock().await;
            if writer.write_all(&bytes).await.is_ok() {
                let _ = writer.flush().await;
            }
        }));
    }

    fn error(&mut self, id: Option<Value>, code: i64, message: &str, data: Option<Value>) {
        let mut error = json!({ "code": code, "message": message });
        if let (Some(data), Value::Object(map)) = (data, &mut error) {
            map.insert("data".into(), data);
        }
        self.reply(&json!({ "jsonrpc": "2.0", "id": id.unwrap_or(Value::Null), "error": error }));
    }

    /// Reads up to the next newline into `self.line`, never holding more than `max_line` bytes of it.
    async fn read_line(&mut self) -> std::io::Result<Read> {
        loop {
            let buffer = self.reader.fill_buf().await?;
            if buffer.is_empty() {
                if self.discarding || self.line.is_empty() {
                    self.discarding = false;
                    return Ok(Read::End);
                }
                return Ok(Read::Line);
            }
            let newline = buffer.iter().position(|b| *b == b'\n');
            let take = newline.map_or(buffer.len(), |at| at + 1);
            let content = newline.unwrap_or(buffer.len());
            let mut over = false;
            if !self.discarding {
                let room = self.max_line.saturating_sub(self.line.len());
                if content > room {
                    self.line.extend_from_slice(buffer.get(..room).unwrap_or_default());
                    over = true;
                } else {
                    self.line.extend_from_slice(buffer.get(..content).unwrap_or_default());
                }
            }
            self.reader.consume(take);
            if over {
                let id = top_level_id(&self.line);
                self.line.clear();
                self.discarding = newline.is_none();
                let message = format!("request larger than {} bytes", self.max_line);
                self.error(id, INVALID_REQUEST, &message, Some(json!({ "maxBytes": self.max_line })));
                continue;
            }
            if newline.is_some() {
                if self.discarding {
                    self.discarding = false;
                    continue;
                }
                return Ok(Read::Line);
            }
        }
    }

    /// One line of input: the message to hand to rmcp, or `None` when the transport answered it itself (or it
    /// needs no answer). No await: `receive` must stay cancel-safe.
    fn accept(&mut self, text: &[u8]) -> Option<RxJsonRpcMessage<RoleServer>> {
        // A cheap first pass reads only the shape and the id: rmcp would read a float id as an integer.
        let Ok(envelope) = serde_json::from_slice::<Envelope>(text) else {
            self.error(None, PARSE_ERROR, "Parse error", None);
            return None;
        };
        if let Envelope::Object { id: Some(Probe(None)), method: Some(_) } = &envelope {
            self.error(None, INVALID_REQUEST, BAD_ID, None);
            return None;
        }
        match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(text) {
            Ok(message) => self.route(message),
            Err(e) => {
                // JSON, but not a JSON-RPC message. A notification (a method and no id) gets no reply.
                let (id, notification) = match envelope {
                    Envelope::Object { id: None, method: Some(Probe(method)) } => (None, method.is_some()),
                    Envelope::Object { id, .. } => (id.and_then(|Probe(id)| id), false),
                    Envelope::Other => (None, false),
                };
                if !notification {
                    self.error(id, INVALID_REQUEST, &format!("Invalid Request: {e}"), None);
                }
                None
            }
        }
    }

    /// A JSON-RPC message with a valid id: answered here before `initialize`, else handed on under rmcp's own id.
    fn route(&mut self, message: RxJsonRpcMessage<RoleServer>) -> Option<RxJsonRpcMessage<RoleServer>> {
        match message {
            JsonRpcMessage::Request(mut request) => {
                if !self.calls.initialized {
                    match &request.request {
                        ClientRequest::InitializeRequest(_) => self.calls.initialized = true,
                        ClientRequest::PingRequest(_) => {}
                        // rmcp reads an `initialize` or `ping` whose params do not fit as a custom request.
                        ClientRequest::CustomRequest(custom)
                            if matches!(custom.method.as_str(), "initialize" | "ping") =>
                        {
                            let message = format!("invalid params for {}", custom.method);
                            self.error(Some(request.id.into_json_value()), INVALID_PARAMS, &message, None);
                            return None;
                        }
                        _ => {
                            let id = request.id.into_json_value();
                            self.error(Some(id), NOT_INITIALIZED, "server not initialized", None);
                            return None;
                        }
                    }
                }
                request.id = self.calls.open(request.id);
                Some(JsonRpcMessage::Request(request))
            }
            JsonRpcMessage::Notification(mut notification) => {
                if !self.calls.initialized {
                    return None;
                }
                if let ClientNotification::CancelledNotification(cancelled) = &mut notification.notification {
                    let named = cancelled.params.request_id.take();
                    for own in named.map(|id| self.calls.cancel(&id)).unwrap_or_default() {
                        let mut one = notification.clone();
                        if let ClientNotification::CancelledNotification(cancelled) = &mut one.notification {
                            cancelled.params.request_id = Some(own);
                        }
                        self.queued.push_back(JsonRpcMessage::Notification(one));
                    }
                    return self.queued.pop_front();
                }
                Some(JsonRpcMessage::Notification(notification))
            }
            // Answers to the server's own requests: rmcp sends none before the session starts.
            response @ (JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_)) => {
                self.calls.initialized.then_some(response)
            }
        }
    }
}

/// The calls handed to rmcp, each under an id of rmcp's own, so two calls under one client id stay apart.
#[derive(Debug, Default)]
struct Calls {
    /// An `initialize` has been handed on.
    initialized: bool,
    /// The last id given out.
    last: i64,
    /// The client's id of each call in flight, by rmcp's id.
    clients: HashMap<i64, RequestId>,
    /// rmcp's ids of the calls in flight, by the client's id.
    own: HashMap<RequestId, Vec<i64>>,
}

impl Calls {
    /// rmcp's id for a new call under the client's id `client`.
    fn open(&mut self, client: RequestId) -> RequestId {
        self.last = self.last.wrapping_add(1);
        let own = self.last;
        self.own.entry(client.clone()).or_default().push(own);
        self.clients.insert(own, client);
        RequestId::Number(own)
    }

    /// The client's id of the call rmcp answers under `own`, which is no longer in flight.
    fn close(&mut self, own: &RequestId) -> Option<RequestId> {
        let RequestId::Number(number) = own else { return None };
        let client = self.clients.remove(number)?;
        if let Some(list) = self.own.get_mut(&client) {
            list.retain(|n| n != number);
            if list.is_empty() {
                self.own.remove(&client);
            }
        }
        Some(client)
    }

    /// rmcp's ids of every call in flight under the client's id `client`; rmcp answers none of them once cancelled.
    fn cancel(&mut self, client: &RequestId) -> Vec<RequestId> {
        let list = self.own.remove(client).unwrap_or_default();
        for number in &list {
            self.clients.remove(number);
        }
        list.into_iter().map(RequestId::Number).collect()
    }

    /// An outgoing message with the client's id put back on an answer.
    fn restore(&mut self, mut item: TxJsonRpcMessage<RoleServer>) -> TxJsonRpcMessage<RoleServer> {
        match &mut item {
            JsonRpcMessage::Response(response) => {
                if let Some(client) = self.close(&response.id) {
                    response.id = client;
                }
            }
            JsonRpcMessage::Error(error) => {
                if let Some(client) = error.id.as_ref().and_then(|own| self.close(own)) {
                    error.id = Some(client);
                }
            }
            JsonRpcMessage::Request(_) | JsonRpcMessage::Notification(_) => {}
        }
        item
    }
}

/// The shape of a line, read without holding any of it: an object's `id` (when present) and whether it has a
/// `method` (and whether that is a string). The first of repeated keys counts.
enum Envelope {
    Object { id: Option<Probe<Value>>, method: Option<Probe<()>> },
    Other,
}

/// A value read for its kind only: `Some` for the kind looked for (a request id, a string), else `None`; nothing
/// else of it is kept.
struct Probe<T>(Option<T>);

impl<'de> Deserialize<'de> for Envelope {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Envelope, D::Error> {
        struct Shape;
        impl<'de> Visitor<'de> for Shape {
            type Value = Envelope;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON value")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Envelope, A::Error> {
                let (mut id, mut method) = (None, None);
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "id" if id.is_none() => id = Some(map.next_value()?),
                        "method" if method.is_none() => method = Some(map.next_value()?),
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(Envelope::Object { id, method })
            }

            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Envelope, A::Error> {
                IgnoredAny.visit_seq(seq).map(|_| Envelope::Other)
            }

            fn visit_bool<E>(self, _: bool) -> Result<Envelope, E> {
                Ok(Envelope::Other)
            }

            fn visit_i64<E>(self, _: i64) -> Result<Envelope, E> {
                Ok(Envelope::Other)
            }

            fn visit_u64<E>(self, _: u64) -> Result<Envelope, E> {
                Ok(Envelope::Other)
            }

            fn visit_f64<E>(self, _: f64) -> Result<Envelope, E> {
                Ok(Envelope::Other)
            }

            fn visit_str<E>(self, _: &str) -> Result<Envelope, E> {
                Ok(Envelope::Other)
            }

            fn visit_unit<E>(self) -> Result<Envelope, E> {
                Ok(Envelope::Other)
            }
        }
        deserializer.deserialize_any(Shape)
    }
}

/// Reads the kind of a value, skipping whatever it is not looking for.
macro_rules! probe {
    ($target:ty, $expecting:literal, { $($found:item)* }) => {
        impl<'de> Deserialize<'de> for Probe<$target> {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Probe<$target>, D::Error> {
                struct Kind;
                impl<'de> Visitor<'de> for Kind {
                    type Value = Probe<$target>;

                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        f.write_str($expecting)
                    }

                    $($found)*

                    fn visit_bool<E>(self, _: bool) -> Result<Probe<$target>, E> {
                        Ok(Probe(None))
                    }

                    fn visit_f64<E>(self, _: f64) -> Result<Probe<$target>, E> {
                        Ok(Probe(None))
                    }

                    fn visit_unit<E>(self) -> Result<Probe<$target>, E> {
                        Ok(Probe(None))
                    }

                    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Probe<$target>, A::Error> {
                        IgnoredAny.visit_seq(seq).map(|_| Probe(None))
                    }

                    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Probe<$target>, A::Error> {
                        IgnoredAny.visit_map(map).map(|_| Probe(None))
                    }
                }
                deserializer.deserialize_any(Kind)
            }
        }
    };
}

probe!(Value, "a request id", {
    fn visit_str<E>(self, id: &str) -> Result<Probe<Value>, E> {
        Ok(Probe(Some(Value::String(id.to_owned()))))
    }

    fn visit_i64<E>(self, id: i64) -> Result<Probe<Value>, E> {
        Ok(Probe((-MAX_SAFE_ID..=MAX_SAFE_ID).contains(&id).then(|| Value::from(id))))
    }

    fn visit_u64<E>(self, id: u64) -> Result<Probe<Value>, E> {
        Ok(Probe(i64::try_from(id).ok().filter(|id| *id <= MAX_SAFE_ID).map(Value::from)))
    }
});

probe!((), "a method", {
    fn visit_str<E>(self, _: &str) -> Result<Probe<()>, E> {
        Ok(Probe(Some(())))
    }

    fn visit_i64<E>(self, _: i64) -> Result<Probe<()>, E> {
        Ok(Probe(None))
    }

    fn visit_u64<E>(self, _: u64) -> Result<Probe<()>, E> {
        Ok(Probe(None))
    }
});

impl<R, W> Transport<RoleServer> for LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let item = self.calls.restore(item);
        // Serialized now, written later: the future must not borrow the transport.
        let bytes = serde_json::to_vec(&item).map(|mut bytes| {
            bytes.push(b'\n');
            bytes
        });
        let writer = Arc::clone(&self.writer);
        async move {
            let bytes = bytes.map_err(std::io::Error::other)?;
            let mut writer = writer.lock().await;
            writer.write_all(&bytes).await?;
            writer.flush().await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            if let Some(message) = self.queued.pop_front() {
                return Some(message);
            }
            match self.read_line().await {
                Ok(Read::Line) => {}
                Ok(Read::End) | Err(_) => return None,
            }
            let line = std::mem::take(&mut self.line);
            let text = line.strip_suffix(b"\r").unwrap_or(&line).trim_ascii();
            if text.is_empty() {
                continue;
            }
            if let Some(message) = self.accept(text) {
                return Some(message);
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        for reply in std::mem::take(&mut self.replies) {
            let _ = reply.await;
        }
        self.writer.lock().await.shutdown().await
    }
}

/// A request id this server answers under: a string, or an integer from -(2^53 - 1) to 2^53 - 1 (not a float,
/// even one with no fraction: `1.0` is refused).
fn is_request_id(id: &Value) -> bool {
    match id {
        Value::String(_) => true,
        Value::Number(n) => n.as_i64().is_some_and(|n| (-MAX_SAFE_ID..=MAX_SAFE_ID).contains(&n)),
        _ => false,
    }
}

/// The top-level `"id"` of a JSON object that may be cut short, read without parsing the values it skips.
fn top_level_id(prefix: &[u8]) -> Option<Value> {
    let mut scanner = Scanner { bytes: prefix, at: 0 };
    scanner.skip_space();
    scanner.expect(b'{')?;
    loop {
        scanner.skip_space();
        let key = scanner.string()?;
        scanner.skip_space();
        scanner.expect(b':')?;
        scanner.skip_space();
        let start = scanner.at;
        scanner.value()?;
        if key == b"\"id\"" {
            let raw = prefix.get(start..scanner.at)?;
            let id: Value = serde_json::from_slice(raw).ok()?;
            return is_request_id(&id).then_some(id);
        }
        scanner.skip_space();
        scanner.expect(b',')?;
    }
}

/// A cursor over JSON bytes that can skip strings and whole values.
struct Scanner<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Scanner<'a> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn skip_space(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_whitespace()) {
            self.at += 1;
        }
    }

    fn expect(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.at += 1)
    }

    /// A string, quotes included; `None` when it is cut short.
    fn string(&mut self) -> Option<&'a [u8]> {
        let start = self.at;
        self.expect(b'"')?;
        loop {
            match self.peek()? {
                b'\\' => self.at += 2,
                b'"' => {
                    self.at += 1;
                    return self.bytes.get(start..self.at);
                }
                _ => self.at += 1,
            }
        }
    }

    /// One value of any kind; `None` when it is cut short.
    fn value(&mut self) -> Option<()> {
        let mut depth = 0usize;
        loop {
            match self.peek()? {
                b'"' => {
                    self.string()?;
                }
                b'{' | b'[' => {
                    depth += 1;
                    self.at += 1;
                }
                b'}' | b']' if depth > 0 => {
                    depth -= 1;
                    self.at += 1;
                }
                // The end of a value at the top: the next member, or the end of the object around it.
                b',' | b'}' | b']' if depth == 0 => return Some(()),
                _ => self.at += 1,
            }
            if depth == 0 && matches!(self.bytes.get(self.at.wrapping_sub(1)), Some(b'"' | b'}' | b']')) {
                return Some(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::top_level_id;

    #[test]
    fn the_id_of_a_request_cut_short() {
        let cut = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"arguments":{"content":"aaaa"#;
        assert_eq!(top_level_id(cut), Some(json!(7)));
        let nested = br#"{"method":"x","params":{"id":1,"s":"}\"{"},"id":"abc","params2":"#;
        assert_eq!(top_level_id(nested), Some(json!("abc")));
        let none = br#"{"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"content":"aaaa"#;
        assert_eq!(top_level_id(none), None);
        assert_eq!(top_level_id(b"[1,2]"), None);
        assert_eq!(top_level_id(br#"{"id":1.5,"#), None);
        assert_eq!(top_level_id(br#"{"id" : "x" }"#), Some(json!("x")));
    }
}
