#include <ctrainer/integrations/mlflow/http_client.h>

#include <curl/curl.h>

#include <memory>
#include <mutex>

namespace ctrainer::http {
namespace {

/// curl_global_init is not thread-safe and must run once before any handle is made.
void init_curl_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
      throw TransportError("libcurl could not be initialised (curl_global_init failed)");
  });
}

size_t append_to_string(char* data, size_t size, size_t count, void* target) {
  static_cast<std::string*>(target)->append(data, size * count);
  return size * count;
}

struct EasyDeleter {
  void operator()(CURL* handle) const { curl_easy_cleanup(handle); }
};
struct HeaderListDeleter {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};

/// Appends one header, keeping the list valid when curl_slist_append fails.
void add_header(std::unique_ptr<curl_slist, HeaderListDeleter>& headers, const std::string& line) {
  curl_slist* grown = curl_slist_append(headers.get(), line.c_str());
  if (grown == nullptr) throw TransportError("out of memory building an HTTP request");
  (void)headers.release();
  headers.reset(grown);
}

}  // namespace

Response request(const std::string& method, const std::string& url, const std::string& json_body,
                 const ClientOptions& options) {
  init_curl_once();
  std::unique_ptr<CURL, EasyDeleter> curl(curl_easy_init());
  if (!curl) throw TransportError("libcurl could not create a request handle");
  CURL* h = curl.get();
  Response response;
  char error_text[CURL_ERROR_SIZE] = {0};
  std::unique_ptr<curl_slist, HeaderListDeleter> headers;
  add_header(headers, "Accept: application/json");
  // No "Expect: 100-continue" round trip (curl adds it to large bodies; some servers stall).
  add_header(headers, "Expect:");
  if (!json_body.empty()) add_header(headers, "Content-Type: application/json");
  if (options.bearer_token) add_header(headers, "Authorization: Bearer " + *options.bearer_token);

  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method.c_str());
  if (!json_body.empty() || method == "POST") {
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, json_body.c_str());
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(json_body.size()));
  }
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &append_to_string);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &response.body);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, error_text);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(options.timeout_seconds * 1000));
  // Signals must not interrupt name resolution in a multi-threaded trainer (curl's advice).
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
  // Only the two web schemes: a tracking URI must never make us open files or other protocols.
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  if (options.username && options.password) {
    curl_easy_setopt(h, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
    curl_easy_setopt(h, CURLOPT_USERNAME, options.username->c_str());
    curl_easy_setopt(h, CURLOPT_PASSWORD, options.password->c_str());
  }
  if (options.insecure_tls) {
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  if (options.ca_certificate_path)
    curl_easy_setopt(h, CURLOPT_CAINFO, options.ca_certificate_path->c_str());
  if (options.client_certificate_path)
    curl_easy_setopt(h, CURLOPT_SSLCERT, options.client_certificate_path->c_str());

  const CURLcode code = curl_easy_perform(h);
  if (code != CURLE_OK) {
    throw TransportError(method + " " + url + ": " +
                         (error_text[0] != '\0' ? error_text : curl_easy_strerror(code)));
  }
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &response.status);
  return response;
}

std::string url_encode(const std::string& text) {
  init_curl_once();
  std::unique_ptr<char, decltype(&curl_free)> encoded(
      curl_easy_escape(nullptr, text.c_str(), static_cast<int>(text.size())), &curl_free);
  if (!encoded) throw TransportError("out of memory encoding a URL");
  return encoded.get();
}

}  // namespace ctrainer::http
