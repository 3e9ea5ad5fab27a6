package admin

import (
	"context"
	"errors"

	"connectrpc.com/connect"

	adminv1 "weir.dev/proto/gen/weir/admin/v1"
)

// SetTenantLimits is being built on the caller-limits branch.
func (s *TenantService) SetTenantLimits(context.Context, *connect.Request[adminv1.SetTenantLimitsRequest]) (*connect.Response[adminv1.SetTenantLimitsResponse], error) {
	return nil, connect.NewError(connect.CodeUnimplemented, errors.New("not built yet"))
}
