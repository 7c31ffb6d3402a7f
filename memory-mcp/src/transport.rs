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
//! - a message of more than [`MAX_VALUES`](crate::MAX_VALUES) JSON values: `-32600` with its `id` (none for a
//!   notification), and nothing runs (see [`crate::jsonrpc`]: rmcp buffers a message whole before reading it);
//! - a request whose `_meta` names its protocol version malformed (not a string, or repeated:
//!   [`Era::Malformed`]): `-32602`, and nothing runs;
//! - before the first `initialize`, every request of the session era ([`Era::Session`]: no protocol version in its
//!   `_meta`, or one of the revisions reached through `initialize`) but `initialize` and `ping`: `-32002` ("server
//!   not initialized"), and nothing runs. A request of the stateless era ([`Era::Stateless`]: MCP `2026-07-28`,
//!   whose `_meta` names its version) is handed on with or without `initialize`, and rmcp serves it by its own
//!   `_meta` (or answers -32022 for a version it does not serve). Notifications and responses that come before
//!   `initialize` are dropped without a reply, except `notifications/cancelled`, which a stateless call in flight
//!   may need. Requests after `initialize` and before `notifications/initialized` are served.
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

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::{ClientNotification, ClientRequest, JsonRpcMessage, RequestId};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;
use tokio::task::JoinHandle;

use crate::jsonrpc::{
    self, BAD_ID, Envelope, Era, INVALID_PARAMS, INVALID_REQUEST, MALFORMED_VERSION, MAX_VALUES, Members,
    NOT_INITIALIZED, PARSE_ERROR, Probe, top_level_id,
};

/// The longest request line accepted, in bytes, without its newline: 4 MiB.
pub const MAX_REQUEST_BYTES: usize = 4 * 1024 * 1024;

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
        // A cheap first pass reads only the shape and the id: rmcp would read a float id as an integer, and would
        // buffer a message of millions of small values whole.
        let Some(envelope) = jsonrpc::envelope(text) else {
            self.error(None, PARSE_ERROR, "Parse error", None);
            return None;
        };
        let mut era = Era::Session;
        if let Envelope::Object(members) = &envelope {
            if members.method.is_some() && matches!(members.id, Some(Probe(None))) {
                self.error(None, INVALID_REQUEST, BAD_ID, None);
                return None;
            }
            if members.values > MAX_VALUES {
                if !is_notification(members) {
                    let message =
                        format!("Invalid Request: a message holds at most {MAX_VALUES} JSON values");
                    self.error(members.valid_id(), INVALID_REQUEST, &message, None);
                }
                return None;
            }
            if members.era == Era::Malformed && matches!(members.method, Some(Probe(Some(_)))) {
                if !is_notification(members) {
                    self.error(members.valid_id(), INVALID_PARAMS, MALFORMED_VERSION, None);
                }
                return None;
            }
            era = members.era;
        }
        match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(text) {
            Ok(message) => self.route(message, era),
            Err(e) => {
                // JSON, but not a JSON-RPC message. A notification (a method and no id) gets no reply.
                let (id, notification) = match &envelope {
                    Envelope::Object(members) => (members.valid_id(), is_notification(members)),
                    Envelope::Array | Envelope::Other => (None, false),
                };
                if !notification {
                    self.error(id, INVALID_REQUEST, &format!("Invalid Request: {e}"), None);
                }
                None
            }
        }
    }

    /// A JSON-RPC message with a valid id, of `era`: answered here when it is of the session era and comes before
    /// `initialize`, else handed on under rmcp's own id.
    fn route(
        &mut self,
        message: RxJsonRpcMessage<RoleServer>,
        era: Era,
    ) -> Option<RxJsonRpcMessage<RoleServer>> {
        match message {
            JsonRpcMessage::Request(mut request) => {
                if !self.calls.initialized {
                    match &request.request {
                        ClientRequest::InitializeRequest(_) => self.calls.initialized = true,
                        ClientRequest::PingRequest(_) => {}
                        // `initialize` selects the session era whatever its `_meta` says; any other request that
                        // names a stateless version needs no session.
                        _ if era == Era::Stateless => {}
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
                request.id = self.calls.open(request.id, era == Era::Stateless);
                Some(JsonRpcMessage::Request(request))
            }
            JsonRpcMessage::Notification(mut notification) => {
                let cancelled =
                    matches!(notification.notification, ClientNotification::CancelledNotification(_));
                if !self.calls.initialized && !cancelled {
                    return None;
                }
                if let ClientNotification::CancelledNotification(cancelled) = &mut notification.notification {
                    let named = cancelled.params.request_id.take();
                    // Before `initialize` only stateless calls can be in flight for the client to give up on (a
                    // `ping` or `initialize` answered then is never cancelled, as before).
                    let session_too = self.calls.initialized;
                    for own in named.map(|id| self.calls.cancel(&id, session_too)).unwrap_or_default() {
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
    /// rmcp's ids of the calls in flight that are of the stateless era.
    stateless: HashSet<i64>,
}

impl Calls {
    /// rmcp's id for a new call under the client's id `client`, `stateless` when it is of the stateless era.
    fn open(&mut self, client: RequestId, stateless: bool) -> RequestId {
        self.last = self.last.wrapping_add(1);
        let own = self.last;
        self.own.entry(client.clone()).or_default().push(own);
        self.clients.insert(own, client);
        if stateless {
            self.stateless.insert(own);
        }
        RequestId::Number(own)
    }

    /// The client's id of the call rmcp answers under `own`, which is no longer in flight.
    fn close(&mut self, own: &RequestId) -> Option<RequestId> {
        let RequestId::Number(number) = own else { return None };
        let client = self.clients.remove(number)?;
        self.stateless.remove(number);
        if let Some(list) = self.own.get_mut(&client) {
            list.retain(|n| n != number);
            if list.is_empty() {
                self.own.remove(&client);
            }
        }
        Some(client)
    }

    /// rmcp's ids of the calls in flight under the client's id `client` (only the stateless ones unless
    /// `session_too`); rmcp answers none of them once cancelled.
    fn cancel(&mut self, client: &RequestId, session_too: bool) -> Vec<RequestId> {
        let Some(list) = self.own.get_mut(client) else { return Vec::new() };
        let (cancelled, kept): (Vec<i64>, Vec<i64>) =
            list.drain(..).partition(|n| session_too || self.stateless.contains(n));
        if kept.is_empty() {
            self.own.remove(client);
        } else {
            *list = kept;
        }
        for number in &cancelled {
            self.clients.remove(number);
            self.stateless.remove(number);
        }
        cancelled.into_iter().map(RequestId::Number).collect()
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

/// A message with a string `method` and no `id`: no error is ever answered to it.
fn is_notification(members: &Members) -> bool {
    members.id.is_none() && matches!(members.method, Some(Probe(Some(_))))
}

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
