#include <curl/curl.h>

int main() {
    CURL *c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_URL, "http://169.254.169.254/latest/meta-data/iam/security-credentials/");
    curl_easy_perform(c);
    curl_easy_cleanup(c);
}
