package azurite

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
)

// batch is a parsed entity group transaction ($batch request): a
// multipart/mixed body holding one changeset whose parts are HTTP
// requests ("Performing entity group transactions").
type batch struct {
	boundary, changeset string
	ops                 []tableOp
}

// parseBatch parses a $batch request body.
func parseBatch(contentType string, body []byte) (*batch, error) {
	boundary, err := boundaryOf(contentType)
	if err != nil {
		return nil, err
	}
	b := &batch{boundary: boundary}
	mr := multipart.NewReader(bytes.NewReader(body), boundary)
	part, err := mr.NextPart()
	if err != nil {
		return nil, fmt.Errorf("batch: %w", err)
	}
	ct := part.Header.Get("Content-Type")
	if strings.HasPrefix(strings.ToLower(ct), "application/http") {
		// A lone retrieve, outside any changeset.
		raw, err := io.ReadAll(part)
		if err != nil {
			return nil, err
		}
		op, err := parseBatchRequest(raw)
		if err != nil {
			return nil, err
		}
		b.ops = append(b.ops, op)
		return b, nil
	}
	b.changeset, err = boundaryOf(ct)
	if err != nil {
		return nil, err
	}
	inner := multipart.NewReader(part, b.changeset)
	for {
		p, err := inner.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("changeset: %w", err)
		}
		raw, err := io.ReadAll(p)
		if err != nil {
			return nil, err
		}
		op, err := parseBatchRequest(raw)
		if err != nil {
			return nil, err
		}
		b.ops = append(b.ops, op)
	}
	return b, nil
}

func boundaryOf(contentType string) (string, error) {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return "", err
	}
	if !strings.HasPrefix(mt, "multipart/") || params["boundary"] == "" {
		return "", fmt.Errorf("not a multipart content type: %q", contentType)
	}
	return params["boundary"], nil
}

// parseBatchRequest parses one action of a batch: a request line, headers,
// an empty line and the body.
func parseBatchRequest(raw []byte) (tableOp, error) {
	head, body, found := bytes.Cut(raw, []byte("\r\n\r\n"))
	if !found {
		head, body, found = bytes.Cut(raw, []byte("\n\n"))
		if !found {
			head, body = bytes.TrimRight(raw, "\r\n"), nil
		}
	}
	line, rest, _ := bytes.Cut(head, []byte("\n"))
	fields := strings.Fields(string(line))
	if len(fields) < 2 {
		return tableOp{}, fmt.Errorf("batch action: bad request line %q", line)
	}
	method, target := fields[0], fields[1]
	hdr, err := textproto.NewReader(bufio.NewReader(io.MultiReader(bytes.NewReader(rest), strings.NewReader("\r\n\r\n")))).ReadMIMEHeader()
	if err != nil && !errors.Is(err, io.EOF) {
		return tableOp{}, fmt.Errorf("batch action headers: %w", err)
	}
	u, err := url.Parse(target)
	if err != nil {
		return tableOp{}, fmt.Errorf("batch action URL: %w", err)
	}
	op := classifyTable(method, http.Header(hdr).Get("X-HTTP-Method"), u.EscapedPath(), u.Query())
	op.body = bytes.TrimSpace(body)
	if op.kind == opInsert && len(op.body) > 0 {
		if props, _, err := parseEntity(op.body); err == nil {
			k := keysOf(props)
			op.pk, op.rk, op.keysKnown = k.pk, k.rk, k.hasPK && k.hasRK
		}
	}
	return op, nil
}

// Azure's messages for the batch rules ("Table Storage error codes" and
// the service's answers).
const (
	msgTooManyActions     = "The batch request operation exceeds the maximum 100 changes per change set."
	msgDifferentPartition = "All commands in a batch must operate on same entity group."
	msgDuplicateRow       = "The batch request contains multiple changes with same row key. An entity can appear only once in a batch request."
)

// checkBatch checks a batch against Azure's rules: at most 100 actions,
// every entity within the entity limits, one PartitionKey, each entity
// once. It returns the failure Azure answers, or nil.
func checkBatch(b *batch, l entityLimits) *batchFailure {
	if len(b.ops) > maxBatchActions {
		// Azure names action 99 (Azurite names 0).
		return &batchFailure{status: http.StatusBadRequest, code: "InvalidInput", msg: indexed(maxBatchActions-1, msgTooManyActions)}
	}
	seen := map[string]bool{}
	first := ""
	for i := range b.ops {
		op := &b.ops[i]
		if e := checkBatchAction(op, l); e != nil {
			msg := e.msg
			if e.indexed {
				msg = indexed(i, msg)
			}
			return &batchFailure{status: e.status, code: e.code, msg: msg}
		}
		if !op.keysKnown {
			continue
		}
		if i == 0 {
			first = op.pk
		} else if op.pk != first {
			return &batchFailure{status: http.StatusBadRequest, code: "CommandsInBatchActOnDifferentPartitions", msg: indexed(i, msgDifferentPartition)}
		}
		if seen[op.rk] {
			return &batchFailure{status: http.StatusBadRequest, code: "InvalidDuplicateRow", msg: indexed(i, msgDuplicateRow)}
		}
		seen[op.rk] = true
	}
	return nil
}

// checkBatchAction checks one action's keys and entity.
func checkBatchAction(op *tableOp, l entityLimits) *limitError {
	switch op.kind {
	case opInsert, opWrite:
		props, dup, err := parseEntity(op.body)
		if err != nil {
			return nil // the target answers a body it cannot read
		}
		if dup != "" {
			return badRequest("DuplicatePropertiesSpecified", msgDuplicateProperties)
		}
		k := entityKeys{pk: op.pk, rk: op.rk, hasPK: op.keysKnown, hasRK: op.keysKnown}
		return l.checkEntity(op.body, props, k)
	case opDelete, opPointRead:
		if !op.keysKnown {
			return nil
		}
		if e := l.checkKey("PartitionKey", op.pk); e != nil {
			return e
		}
		return l.checkKey("RowKey", op.rk)
	}
	return nil
}
