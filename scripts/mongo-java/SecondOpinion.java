import de.bwaldvogel.mongo.MongoServer;
import de.bwaldvogel.mongo.MongoVersion;
import de.bwaldvogel.mongo.backend.memory.MemoryBackend;
import java.util.List;

/**
 * mongo-java-server (in memory) on 127.0.0.1, the independent MongoDB-wire implementation some specs also run
 * against. Usage: SecondOpinion PORT (0: any free port). Prints "listening on 127.0.0.1:PORT" once bound, like
 * the local FerretDB build, and exits when its stdin closes, so a killed parent leaves no server behind.
 */
public final class SecondOpinion {
  /**
   * The server's newest version (5.0) reports wire version 8, below the 9 (MongoDB 4.4) the Node driver requires;
   * announce 4.4, which is what its command set resembles.
   */
  private static final MongoVersion ANNOUNCED = new MongoVersion() {
    @Override public List<Integer> getVersionArray() { return List.of(4, 4, 0); }
    @Override public int getWireVersion() { return 9; }
  };

  public static void main(String[] args) throws Exception {
    MongoServer server = new MongoServer(new MemoryBackend().version(ANNOUNCED));
    server.bind("127.0.0.1", args.length > 0 ? Integer.parseInt(args[0]) : 0);
    System.out.println("listening on 127.0.0.1:" + server.getLocalAddress().getPort());
    System.out.flush();
    while (System.in.read() != -1) {
      // Nothing is sent on stdin; read only to see it close.
    }
    server.shutdownNow();
  }
}
