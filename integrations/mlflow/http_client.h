#pragma once
/// \file A small synchronous HTTP client on libcurl (Debian's libcurl4-openssl-dev), for the
/// REST APIs of tracking servers. One call is one request on its own easy handle, so calls from
/// different threads do not share state.
#include <optional>
#include <stdexcept>
#include <string>

namespace ctrainer::http {

/// How to reach a server: authentication, TLS and the time a request may take.
struct ClientOptions {
  /// Seconds before a request (connect + transfer) is abandoned.
  double timeout_seconds = 120;
  /// Sent as "Authorization: Bearer <token>" when set.
  std::optional<std::string> bearer_token;
  /// HTTP basic authentication when both are set.
  std::optional<std::string> username;
  std::optional<std::string> password;
  /// Skips the server certificate's verification (https only).
  bool insecure_tls = false;
  /// A CA bundle that verifies the server's certificate instead of the system's.
  std::optional<std::string> ca_certificate_path;
  /// A client certificate (PEM, key included) for servers that require one.
  std::optional<std::string> client_certificate_path;
};

/// What the server answered.
struct Response {
  long status = 0;   ///< the HTTP status code
  std::string body;  ///< the response body
};

/// No answer at all: the server could not be reached, the connection broke or the request took
/// longer than ClientOptions::timeout_seconds. `what()` holds curl's description and the URL.
class TransportError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Sends `method` ("GET", "POST", ...) to `url` with `json_body` (sent as application/json when
/// not empty) and returns the answer whatever its status. Throws TransportError when there is
/// none.
Response request(const std::string& method, const std::string& url, const std::string& json_body,
                 const ClientOptions& options);

/// `text` percent-encoded for a URL's query (RFC 3986 unreserved characters kept).
std::string url_encode(const std::string& text);

}  // namespace ctrainer::http
