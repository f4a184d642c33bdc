from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

class ChallengeRequest(_message.Message):
    __slots__ = ("cluster_user", "client_nonce")
    CLUSTER_USER_FIELD_NUMBER: _ClassVar[int]
    CLIENT_NONCE_FIELD_NUMBER: _ClassVar[int]
    cluster_user: str
    client_nonce: bytes
    def __init__(self, cluster_user: _Optional[str] = ..., client_nonce: _Optional[bytes] = ...) -> None: ...

class ChallengeReply(_message.Message):
    __slots__ = ("server_nonce", "server_proof", "expires_in_ms")
    SERVER_NONCE_FIELD_NUMBER: _ClassVar[int]
    SERVER_PROOF_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_IN_MS_FIELD_NUMBER: _ClassVar[int]
    server_nonce: str
    server_proof: bytes
    expires_in_ms: int
    def __init__(self, server_nonce: _Optional[str] = ..., server_proof: _Optional[bytes] = ..., expires_in_ms: _Optional[int] = ...) -> None: ...
