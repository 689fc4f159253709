-- PostgreSQL schema version 2: the answers of write calls that carried a request_key
-- (store/request_keys.rs; SQLite migration 13). Never edit: a change is a new migration.

CREATE TABLE request_keys (
    tool         TEXT    NOT NULL,
    request_key  TEXT    NOT NULL,
    arguments    TEXT    NOT NULL,
    answer       TEXT    NOT NULL,
    created_us   BIGINT  NOT NULL,
    PRIMARY KEY (tool, request_key)
);
CREATE INDEX request_keys_created ON request_keys (created_us);
