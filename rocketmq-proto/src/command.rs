//! [`Command`]: one remoting request or response, independent of its header encoding.

use bytes::Bytes;

use crate::code::{LanguageCode, RequestCode, ResponseCode};
use crate::ext::{CommandHeader, ExtFields, HeaderError};

/// The version ordinal this client announces by default: `V4_9_4` (397), the first at which name
/// servers answer route queries in standard JSON (`remoting-protocol.md` §1.7) and recent enough
/// for every broker-side gate a consumer needs (send-back honours `maxReconsumeTimes` from 117,
/// `GET_CONSUMER_RUNNING_INFO` forwarding from 58).
pub const DEFAULT_VERSION: i32 = 397;

/// Bit 0 of `flag`: the command is a response.
pub const FLAG_RESPONSE: i32 = 1;
/// Bit 1 of `flag`: the request is oneway (no response will come).
pub const FLAG_ONEWAY: i32 = 1 << 1;

/// One remoting command. `code` is a [`RequestCode`] for requests and a [`ResponseCode`] for
/// responses; [`Command::is_response`] tells which.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Command {
    /// The raw code; see [`Command::request_code`] and [`Command::response_code`].
    pub code: i32,
    /// The sender's language.
    pub language: LanguageCode,
    /// The sender's version ordinal.
    pub version: i32,
    /// The request id, echoed by the response.
    pub opaque: i32,
    /// Bit field: [`FLAG_RESPONSE`], [`FLAG_ONEWAY`].
    pub flag: i32,
    /// Free text; the error reason on failures.
    pub remark: Option<String>,
    /// The typed header, flattened.
    pub ext_fields: ExtFields,
    /// The body; empty when there is none. A slice of the received frame, never a copy.
    pub body: Bytes,
}

impl Command {
    /// A request with `header` and no body. The opaque is 0 until the sender assigns one.
    pub fn request(code: RequestCode, header: &impl CommandHeader) -> Self {
        Self::request_with_fields(code, header.to_ext_fields())
    }

    /// A request with raw `extFields` (for headers with no fields, pass an empty map).
    pub fn request_with_fields(code: RequestCode, ext_fields: ExtFields) -> Self {
        Self {
            code: code.0,
            language: LanguageCode::default(),
            version: DEFAULT_VERSION,
            opaque: 0,
            flag: 0,
            remark: None,
            ext_fields,
            body: Bytes::new(),
        }
    }

    /// A response to the request with `opaque`.
    pub fn response(code: ResponseCode, opaque: i32) -> Self {
        Self {
            code: code.0,
            language: LanguageCode::default(),
            version: DEFAULT_VERSION,
            opaque,
            flag: FLAG_RESPONSE,
            remark: None,
            ext_fields: ExtFields::new(),
            body: Bytes::new(),
        }
    }

    /// Sets the body.
    pub fn with_body(mut self, body: impl Into<Bytes>) -> Self {
        self.body = body.into();
        self
    }

    /// Sets the remark.
    pub fn with_remark(mut self, remark: impl Into<String>) -> Self {
        self.remark = Some(remark.into());
        self
    }

    /// Marks the request oneway.
    pub fn oneway(mut self) -> Self {
        self.flag |= FLAG_ONEWAY;
        self
    }

    /// Whether this is a response.
    pub fn is_response(&self) -> bool {
        self.flag & FLAG_RESPONSE != 0
    }

    /// Whether this is a oneway request.
    pub fn is_oneway(&self) -> bool {
        !self.is_response() && self.flag & FLAG_ONEWAY != 0
    }

    /// The code read as a request code.
    pub fn request_code(&self) -> RequestCode {
        RequestCode(self.code)
    }

    /// The code read as a response code.
    pub fn response_code(&self) -> ResponseCode {
        ResponseCode(self.code)
    }

    /// Decodes the typed header from `extFields`.
    pub fn header<H: CommandHeader>(&self) -> Result<H, HeaderError> {
        H::decode_from(&self.ext_fields)
    }
}
