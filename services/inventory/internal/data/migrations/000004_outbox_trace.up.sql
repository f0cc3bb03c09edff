-- The trace context (W3C traceparent/tracestate, as JSON) of the
-- transaction that wrote an outbox row, so the relay sends the event in
-- the trace of the order event that caused it.
ALTER TABLE outbox ADD COLUMN trace_context VARCHAR(1024) NOT NULL DEFAULT '';
