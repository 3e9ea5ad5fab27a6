package apierr

import (
	"errors"
	"fmt"
	"testing"

	"connectrpc.com/connect"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"

	"weir.dev/controlplane/internal/store"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
)

func TestInvalidListsEveryProblem(t *testing.T) {
	t.Parallel()
	var ps Problems
	if ps.Err() != nil {
		t.Fatal("no problems, yet an error")
	}
	Name(&ps, "name", "Bad Name")
	ps.Add("", CodeRequired, "something is missing")
	err := ps.Err()
	if connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Fatalf("code = %v", connect.CodeOf(err))
	}
	want := []*adminv1.Problem{
		{Field: "name", Code: CodeInvalidName, Message: "name must be 1-64 of a-z, 0-9, '_' and '-'"},
		{Code: CodeRequired, Message: "something is missing"},
	}
	if diff := cmp.Diff(want, ProblemsOf(err), protocmp.Transform()); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	if got, want := err.(*connect.Error).Message(), "invalid request, 2 problems: name: name must be 1-64 of a-z, 0-9, '_' and '-'; something is missing"; got != want {
		t.Errorf("message = %q\nwant %q", got, want)
	}
}

func TestFromStore(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		want connect.Code
	}{
		{store.NotFoundf("x"), connect.CodeNotFound},
		{&store.Error{Kind: store.ErrConflict, Msg: "taken"}, connect.CodeAlreadyExists},
		{&store.Error{Kind: store.ErrInvalid, Field: "f", Code: "c", Msg: "bad"}, connect.CodeInvalidArgument},
		{store.Preconditionf("in use"), connect.CodeFailedPrecondition},
		{connect.NewError(connect.CodePermissionDenied, errors.New("no")), connect.CodePermissionDenied},
		{fmt.Errorf("wrapped: %w", errors.New("db down")), connect.CodeInternal},
	}
	for _, tc := range tests {
		got := FromStore(tc.err)
		if connect.CodeOf(got) != tc.want {
			t.Errorf("FromStore(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
	internal := FromStore(errors.New("password=hunter2 in some driver error"))
	if internal.(*connect.Error).Message() != "internal error" {
		t.Errorf("internal error leaks its cause: %v", internal)
	}
	if Cause(internal).Error() != "password=hunter2 in some driver error" {
		t.Errorf("Cause lost: %v", Cause(internal))
	}
	if FromStore(nil) != nil {
		t.Error("FromStore(nil) != nil")
	}
}

func TestHost(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want string
	}{
		{"API.OpenAI.com.", "api.openai.com"},
		{"example.com:0443", "example.com:443"},
		{"10.0.0.1", "10.0.0.1"},
		{"[::1]:8080", "[::1]:8080"},
		{"::1", "[::1]"},
		{"https://example.com", ""},
		{"example.com/path", ""},
		{"user@example.com", ""},
		{"*.example.com", ""},
		{"example.com:", ""},
		{"example.com:99999", ""},
		{"", ""},
	}
	for _, tc := range tests {
		var ps Problems
		got, ok := Host(&ps, "hosts[0]", tc.in)
		if got != tc.want || ok != (tc.want != "") || (ps.Len() == 0) != ok {
			t.Errorf("Host(%q) = %q, %v, %d problems; want %q", tc.in, got, ok, ps.Len(), tc.want)
		}
	}
}
