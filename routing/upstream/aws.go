package upstream

import (
	"net/http"
	"strings"
)

// AWS (Bedrock) names its errors by type: the header x-amzn-ErrorType
// ("ThrottlingException:http://internal.amazon.com/coral/…"), else the
// body's "__type" ("com.amazonaws.bedrock#ThrottlingException"), else a
// code ending in "Exception". routing gives ThrottlingException,
// ModelNotReadyException and TooManyRequestsException the meaning of a rate
// limit (R-FAIL-2), ServiceQuotaExceededException that of an account-wide
// one (R-ORDER-4), and an AccessDeniedException about billing that of spent
// money (R-FAIL-3).

// awsBillingWords make an AccessDeniedException a money refusal.
var awsBillingWords = []string{"payment instrument", "invalid_payment_instrument", "billing", "payment method", "insufficient funds"}

// AWSErrorType is the AWS error type name of an answer: the header
// x-amzn-ErrorType, else the body's "__type", else, when bedrock (the
// record speaks AWS Bedrock), the first body code ending in "Exception".
// Prefixes ("com.amazon…#") and suffixes (":http://…") are cut; "" unless
// what is left is a plain token (IsToken).
func AWSErrorType(h http.Header, b *ErrorBody, bedrock bool) string {
	cands := []string{header(h, "x-amzn-ErrorType")}
	cands = append(cands, b.awsTypes...)
	if bedrock {
		for _, c := range b.codes {
			if strings.HasSuffix(c, "Exception") {
				cands = append(cands, c)
			}
		}
	}
	for _, c := range cands {
		if i := strings.IndexByte(c, ':'); i >= 0 {
			c = c[:i]
		}
		if i := strings.LastIndexByte(c, '#'); i >= 0 {
			c = c[i+1:]
		}
		c = strings.TrimSpace(c)
		if IsToken(c) {
			return c
		}
	}
	return ""
}

// AWSBilling reports whether a message of the body speaks of payment or
// billing ("INVALID_PAYMENT_INSTRUMENT", "payment method", "insufficient
// funds", …): what makes an AWS AccessDeniedException a money refusal
// rather than a refused key (R-FAIL-3).
func (b *ErrorBody) AWSBilling() bool {
	return b.anyMessage(awsBillingWords)
}
