from rest_framework.routers import DefaultRouter

from webapp.api import views

app_name = "api"

router = DefaultRouter()
router.register("dictionaries", views.DictionaryViewSet, basename="dictionary")
router.register("concepts", views.ConceptViewSet, basename="concept")
router.register("collections", views.CollectionViewSet, basename="collection")
router.register("imports", views.ImportJobViewSet, basename="import")

urlpatterns = router.urls
